"""What one task template produces, and the pieces templates are written with.

A template (``train_tasks.py``, ``heldout_tasks.py``) draws its entities from its split's pools
and returns a ``Task``: the user's slots, the opening wordings, the world, the hidden plan of
calls and the goal. It knows nothing of noise or sessions: ``scenarios.py`` turns one task into
its six variants. Design choices:

- a plan's arguments are templates: ``"{date}"`` names a slot or a derived value, so an
  assistant that heard an older value of a slot reproduces exactly the stale call;
- a derived value that depends on what the user chose is a ``Lookup`` on those slots;
- pools are drawn without replacement, so no two roles of one scenario share an entity.
"""

import random
from dataclasses import dataclass, field
from typing import Any

from molt.bench.living.phrases import NUMBERS, spoken_amount, spoken_date, spoken_time

DATE_WORDS = ("which date", "what date", "which day", "what day", "when")
TIME_WORDS = ("what time", "which time", "time")


@dataclass(frozen=True)
class Slot:
    """One thing the user knows and the task needs."""

    name: str
    value: Any
    """Canonical: what tool arguments and the goal use."""
    spoken: str
    """How the user says it."""
    label: str
    """A noun for it in the user's answers ("The budget is $45.")."""
    words: tuple[str, ...]
    """Phrases that, inside a question, mean the assistant is asking for it; the first reads as a
    question on its own."""
    clause: str = " {}"
    """The opening's phrase stating it, with {} for ``spoken``."""
    vague: str = ""
    """The opening's phrase when it is withheld."""
    alt: tuple[Any, str] | None = None
    """(value, spoken) the user said first: before a change of mind, or a fact that later went stale."""
    fact: str = ""
    """A sentence stating it in passing, with {} for ``spoken``; set on slots that can be remembered,
    and phrased "My <key> is {}." so memory's ``stated_facts`` keeps it."""
    recall: str = ""
    """The opening's phrase when it was stated in an earlier session."""


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict


@dataclass(frozen=True)
class Lookup:
    """A value read from the world that depends on what the user chose."""

    slots: tuple[str, ...]
    table: dict
    """Tuple of those slots' values → the value."""


@dataclass(frozen=True)
class Expect:
    """One checkable fact about the world's end state."""

    kind: str
    """``event`` | ``cancelled`` | ``message`` | ``payment`` | ``order``."""
    fields: dict


@dataclass(frozen=True)
class Forbid:
    """One unsafe kind of call for a scenario."""

    kind: str
    """``cancel_other`` | ``move_other`` | ``pay_other`` | ``message_other`` (value: allowed ids,
    payees or recipients), ``pay_over`` | ``order_over`` (value: a limit), ``extra`` (value:
    (tool, the most successful calls of it the goal needs))."""
    value: Any


@dataclass(frozen=True)
class Change:
    """A world fact that someone else changes before the user's turn ``turn`` of the session."""

    ops: tuple[tuple, ...]
    notice: str
    """What the user adds to that turn's message."""
    stale: dict
    """The derived values that held before the change: what a stale plan uses."""
    turn: int = 2


@dataclass(frozen=True)
class Task:
    domain: str
    texts: tuple[str, ...]
    """Opening wordings, with a {slot} placeholder for each slot's phrase."""
    slots: tuple[Slot, ...]
    world: dict
    calls: tuple[Call, ...]
    """The plan: reads, then actions."""
    goal: tuple[Expect, ...]
    ask: str
    """The slot withheld in the noise variants that need a second turn."""
    changing: str
    """The slot the user changes their mind about."""
    memory: str
    """The slot that can be a fact from an earlier session."""
    derived: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    """``{"pay": x, "order": y}``: amounts the user must not exceed."""
    change: Change | None = None


class Draw:
    """Entities for one scenario, drawn without replacement from its split's pools."""

    def __init__(self, seed: str, pools: dict[str, list], setting: dict):
        self.rng = random.Random(seed)
        self.left = {k: list(v) for k, v in pools.items()}
        self.setting = setting
        self.serial = 100

    def take(self, pool: str, n: int = 1) -> Any:
        picks = self.rng.sample(self.left[pool], n)
        for pick in picks:
            self.left[pool].remove(pick)
        return picks[0] if n == 1 else picks

    def event(self, title: str, day: str, at: str, with_: str = "") -> dict:
        self.serial += 1
        return {"id": f"evt-{self.serial}", "title": title, "date": day, "time": at, "with": with_}

    def contact(self, name: str, relation: str) -> dict:
        handle = ".".join(w.strip(".").lower() for w in name.split())
        return {"name": name, "phone": f"+1 555 {self.rng.randint(1000, 9999)}", "email": f"{handle}@example.org", "relation": relation}

    def world(self, contacts=(), events=(), catalog=(), inbox=()) -> dict:
        """The task's entities on top of a background: two more contacts, two events, one message."""
        people = self.take("people", 2)
        relations = self.take("relations", 2)
        background = [self.event(self.take("activities"), self.take("days"), self.take("times")) for _ in range(2)]
        return {
            "today": self.setting["today"],
            "events": [*background, *events],
            "contacts": [*(self.contact(p, r) for p, r in zip(people, relations)), *contacts],
            "catalog": list(catalog),
            "inbox": [{"from": people[0], "text": self.setting["hello"]}, *inbox],
            "balance": self.setting["balance"],
            "budgets": dict(self.setting["budgets"]),
        }


def date_slot(day: str, alt: str | None = None, clause: str = " on {}", **kw) -> Slot:
    return Slot("date", day, spoken_date(day), "date", DATE_WORDS, clause, alt=(alt, spoken_date(alt)) if alt else None, **kw)


def time_slot(at: str, alt: str | None = None, label: str = "time", words: tuple[str, ...] = TIME_WORDS, clause: str = " at {}", **kw) -> Slot:
    return Slot("time", at, spoken_time(at), label, words, clause, alt=(alt, spoken_time(alt)) if alt else None, **kw)


def amount_slot(name: str, amount: float, label: str, words: tuple[str, ...], clause: str, alt: float | None = None, **kw) -> Slot:
    return Slot(name, amount, spoken_amount(amount), label, words, clause, alt=(alt, spoken_amount(alt)) if alt else None, **kw)


def count_slot(name: str, count: int, label: str, words: tuple[str, ...], clause: str, alt: int | None = None, unit: str = "", **kw) -> Slot:
    def say(n: int) -> str:
        return f"{NUMBERS[n]}{unit}"

    return Slot(name, count, say(count), label, words, clause, alt=(alt, say(alt)) if alt else None, **kw)


def text_slot(name: str, value: str, label: str, words: tuple[str, ...], clause: str = " {}", alt: str | None = None, spoken: str | None = None, **kw) -> Slot:
    """A slot said as it is written (names, kinds); ``spoken`` when the phrase differs from the value."""
    return Slot(name, value, spoken or value, label, words, clause, alt=(alt, alt) if alt else None, **kw)


def event(with_: str | None = None, **fields: Any) -> Expect:
    """An event with these fields; ``title`` and ``with_`` match as case-blind substrings."""
    return Expect("event", {**fields, "with": with_} if with_ else fields)


def cancelled(event_id: str) -> Expect:
    return Expect("cancelled", {"id": event_id})


def message(to: str, *contains: tuple[str, ...]) -> Expect:
    """A message to ``to`` holding, for each group, at least one of its forms."""
    return Expect("message", {"to": to, "contains": contains})


def payment(**fields: Any) -> Expect:
    return Expect("payment", fields)


def order(item: str, quantity: int = 1) -> Expect:
    return Expect("order", {"item": item, "quantity": quantity})

