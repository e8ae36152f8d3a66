"""Per-user memory: facts about each user, bi-temporal, in the registry's database.

A fact is a ``key`` ("home city") and a ``value`` ("Lisbon") about one user, stored with the time
it became true (``valid_from``), the time molt learned it (``recorded_at``) and where it came from
(a conversation turn, or the user through ``/v1/memory``). Rows are never updated. A change adds a
row; the fact is the newest *valid* row of its key, picked deterministically:

1. the latest ``valid_from`` not after the time asked about;
2. on a tie, the latest ``recorded_at``;
3. on a tie, the row written last.

The other rows are the fact's history. Asking "as known at" a past time ignores rows recorded
after it, so a decision can be replayed with what molt knew then. Forgetting deletes every row of
a key (or of a user): the user asked for it to be gone, history included. Every read and write
names one user, and no query spans users.

Before a turn of a request that names its ``user``, the proxy puts that user's relevant facts
(``relevant``: shared words and the base's hidden-state cosine, then the newest, within the HCP's
``[memory] budget_tokens``) into the answering specialist's view as one system message
(``facts_note``).

After the turn, off the critical path (it follows the turn's summary), the proxy writes what the
user said about themselves: the ``my X is Y`` statements (``stated_facts``) and the extraction
hop's ``key: value`` lines (``extracted_facts``), each with the turn as its source and valid from
when the turn ended. A value that is not in the user's own words never reaches memory.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone

from sqlalchemy import Engine, delete, select
from sqlalchemy.orm import sessionmaker

from molt.registry.database import for_writing
from molt.registry.schema import MemoryFact

USER_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,80}$")
MAX_KEY = 200
MAX_VALUE = 2000
SOURCES = ("conversation", "user")


class MemoryInputError(ValueError):
    """A user id, key or value that memory does not take."""


@dataclass(frozen=True)
class Fact:
    user: str
    key: str
    value: str
    valid_from: datetime
    recorded_at: datetime
    source: str
    source_turn: str | None
    id: int

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value, "valid_from": self.valid_from.isoformat(), "recorded_at": self.recorded_at.isoformat(),
                "source": self.source, "source_turn": self.source_turn, "id": self.id}


def normal_key(key: str) -> str:
    """Lower case, single spaces: "Home  City" and "home city" are one key."""
    normal = " ".join(key.lower().split())
    if not 0 < len(normal) <= MAX_KEY:
        raise MemoryInputError(f"a fact's key is 1 to {MAX_KEY} characters, not {len(normal)}")
    return normal


def checked_user(user: str) -> str:
    if not USER_ID.match(user or ""):
        raise MemoryInputError(f"a user id is 1 to 80 letters, digits or _.:@- characters, not {user!r}")
    return user


class Memory:
    """Example::

        memory = Memory(open_database())
        memory.remember("ana", "home city", "Porto")
        memory.remember("ana", "Home City", "Lisbon")        # she moved: the newest valid row wins
        [fact] = memory.facts("ana")                           # Lisbon; Porto is history
        memory.forget("ana", "home city")                      # both rows gone
    """

    def __init__(self, engine: Engine):
        self.session = sessionmaker(for_writing(engine))

    def remember(self, user: str, key: str, value: str, *, valid_from: datetime | None = None, source: str = "conversation",
                 source_turn: str | None = None, now: datetime | None = None) -> Fact:
        """Add one row; ``valid_from`` defaults to when it is recorded."""
        value = value.strip()
        if not 0 < len(value) <= MAX_VALUE:
            raise MemoryInputError(f"a fact's value is 1 to {MAX_VALUE} characters, not {len(value)}")
        if source not in SOURCES:
            raise MemoryInputError(f"a fact's source is one of {', '.join(SOURCES)}, not {source!r}")
        recorded = _utc(now or datetime.now(timezone.utc))
        row = MemoryFact(user_id=checked_user(user), key=normal_key(key), value=value, valid_from=_utc(valid_from or recorded),
                         recorded_at=recorded, source=source, source_turn=source_turn)
        with self.session.begin() as session:
            session.add(row)
            session.flush()
            return _fact(row)

    def facts(self, user: str, at: datetime | None = None, known_at: datetime | None = None) -> list[Fact]:
        """The user's facts, one per key, sorted by key: true ``at`` (default now) as known at ``known_at`` (default now)."""
        latest: dict[str, Fact] = {}
        for fact in self._rows(user, None, at, known_at):
            if fact.key not in latest or _order(fact) > _order(latest[fact.key]):
                latest[fact.key] = fact
        return [latest[key] for key in sorted(latest)]

    def history(self, user: str, key: str) -> list[Fact]:
        """Every row of one key, the current fact first (the rule's order, newest first); future-valid rows included."""
        return sorted(self._rows(user, normal_key(key), None, None, valid_only=False), key=_order, reverse=True)

    def forget(self, user: str, key: str | None = None) -> int:
        """Delete every row of ``key`` (None: all of the user's facts); how many rows went."""
        query = delete(MemoryFact).where(MemoryFact.user_id == checked_user(user))
        if key is not None:
            query = query.where(MemoryFact.key == normal_key(key))
        with self.session.begin() as session:
            return session.execute(query).rowcount

    def _rows(self, user: str, key: str | None, at: datetime | None, known_at: datetime | None, valid_only: bool = True) -> list[Fact]:
        now = datetime.now(timezone.utc)
        query = select(MemoryFact).where(MemoryFact.user_id == checked_user(user), MemoryFact.recorded_at <= _utc(known_at or now))
        if key is not None:
            query = query.where(MemoryFact.key == key)
        if valid_only:
            query = query.where(MemoryFact.valid_from <= _utc(at or now))
        with self.session() as session:
            return [_fact(row) for row in session.scalars(query)]


Similarity = Callable[[str, list[str]], list[float]]
"""Cosines in [-1, 1] between a turn's text and each fact's text (``memory_search.HiddenStateSimilarity``)."""


def relevant(facts: list[Fact], text: str, budget_tokens: int, count_tokens: Callable[[str], int], similarity: Similarity | None = None) -> list[Fact]:
    """The facts to put before a turn, as many as fit ``budget_tokens`` in ``facts_note``, best
    first: shared words with ``text`` (one point each) plus the embedding cosine when given
    (at most one point: a shared word still counts for as much as meaning), then the most
    recently recorded."""
    words = _words(text)
    near = similarity(text, [fact_text(f) for f in facts]) if similarity and facts else [0.0] * len(facts)
    score = {f.id: len(words & _words(fact_text(f))) + max(cosine, 0.0) for f, cosine in zip(facts, near)}
    ranked = sorted(facts, key=lambda f: (score[f.id], f.recorded_at, f.id), reverse=True)
    chosen: list[Fact] = []
    for fact in ranked:
        if count_tokens(facts_note([*chosen, fact])) > budget_tokens:
            break
        chosen.append(fact)
    return chosen


TITLE = r"(?:Dr|Mr|Mrs|Ms|Prof|St)\.\s*"
VALUE_ENDS = r"\s+(?:and|but|so|because|which|these days|nowadays|now|at the moment|by the way)\b|[.,;!?\n]|$"
"""A value stops at a joining word, a trailing time adverb ("… these days") or punctuation."""
STATED = re.compile(
    rf"\bmy ((?:[a-z]+'s )?[a-z]+(?: [a-z]+){{0,2}}) (?:is|are|'s) (?:now |still |actually )?((?:{TITLE}|[^.,;!?\n])+?)(?={VALUE_ENDS})",
    re.IGNORECASE,
)
""""my dentist is Dr. Okafor", "my gift budget is now 80", "my physio is Jana Král these days":
a statement about the user's own things."""
LIVES = re.compile(r"\bI (?:live|moved) (?:now )?(?:in|to) ((?:[A-Z][\w-]*)(?: [A-Z][\w-]*)*)")
MAX_EXTRACTED = 8
NOT_FACTS = {"question", "problem", "point", "guess", "bad", "mistake"}
"""``my question is …`` says nothing lasting about the user."""


def stated_facts(said: str) -> list[tuple[str, str]]:
    """The ``my X is Y`` (and ``I live in Y``) statements of a user's message, as (key, value):
    precise, and kept even when no model hop runs."""
    found = [(key, value) for key, value in STATED.findall(said) if key.lower() not in NOT_FACTS]
    found += [("home city", city) for city in LIVES.findall(said)]
    return [(key.lower(), value.strip()) for key, value in found if value.strip()][:MAX_EXTRACTED]


def extracted_facts(reply: str, said: str) -> list[tuple[str, str]]:
    """The ``key: value`` lines of the extraction hop's reply whose value is in the user's own
    words (``said``): a small model may invent a value or copy the prompt's example; neither
    reaches memory."""
    heard = set(re.findall(r"[a-z0-9]+", said.lower()))
    facts = []
    for line in reply.splitlines():
        key, colon, value = line.strip().lstrip("-*•0123456789.) ").partition(":")
        key, value = " ".join(key.lower().split()).strip("`'\""), value.strip().strip("`'\".")
        words = re.findall(r"[a-z0-9]+", value.lower())
        if colon and key and value and len(key.split()) <= 5 and key != "none" and words and set(words) <= heard:
            facts.append((key, value))
    return facts[:MAX_EXTRACTED]


def facts_note(facts: list[Fact]) -> str:
    """How remembered facts reach the answering specialist: one system message."""
    return "What you know about this user (from earlier conversations):\n" + "\n".join(f"- {f.key}: {f.value}" for f in facts)


def fact_text(fact: Fact) -> str:
    return f"{fact.key}: {fact.value}"


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2}


def _order(fact: Fact) -> tuple:
    return (fact.valid_from, fact.recorded_at, fact.id)


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise MemoryInputError(f"a time in memory carries its zone (e.g. 2026-05-01T09:00:00+00:00), not {moment.isoformat()}")
    return moment.astimezone(timezone.utc)


def _fact(row: MemoryFact) -> Fact:
    return Fact(row.user_id, row.key, row.value, _utc(_aware(row.valid_from)), _utc(_aware(row.recorded_at)), row.source, row.source_turn, row.id)


def _aware(moment: datetime) -> datetime:
    """SQLite hands datetimes back without their zone; molt writes UTC only."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)
