"""What every data family is: its cases, its three splits, its scorer and its training recipe.

A family is one object that owns everything about one kind of work: the seeded generator of its
conversations (data is code: reproducible from a seed, never model output), the rule that
separates its splits, the scorer of an answer, the system-prompt hook, the summary the
specialist learns for the proxy's summary hop, and the SFT recipe defaults. Benches, the
bootstrap, the router's training data and RL environments take families as values, so adding a
family touches one module.

The splits, by what they withhold:

- ``train``: what the specialist is trained on.
- ``heldout``: **held out by construction**: things never trained on (functions, task kinds,
  entities, facts), with their own templates and random stream. No reference answer, function
  name, entity or word 8-gram of a held-out case occurs in train (``tests/families``).
- ``wording``: the train split's things (same functions, kinds, facts) asked with held-out
  templates: generalisation across wording only, reported separately.
"""

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

Split = Literal["train", "heldout", "wording"]
SPLITS: tuple[Split, ...] = ("train", "heldout", "wording")
Message = dict[str, Any]


@dataclass(frozen=True)
class Case:
    family: str
    messages: list[Message]
    """The conversation up to the turn the model must write (system prompt not included)."""
    answer: Message
    """The reference assistant message for that turn (trained on; the scorer may use it)."""
    tools: list[dict] | None = None
    check: dict[str, Any] = field(default_factory=dict)
    """What the family's scorer needs: expected calls, tests, required words…"""

    @property
    def request(self) -> str:
        """The user's text of the first turn."""
        return next(m["content"] for m in self.messages if m["role"] == "user")

    def training_row(self, system: str) -> dict:
        """One line of chat JSONL for MinT SFT: the system prompt, the conversation, the answer."""
        row = {"messages": [{"role": "system", "content": system}, *self.messages, self.answer]}
        return {**row, "tools": self.tools} if self.tools else row


@dataclass(frozen=True)
class Recipe:
    """How a family's specialist is trained by default (``molt specialists bootstrap``)."""

    examples: int
    epochs: int = 1
    learning_rate: float = 2e-3
    rank: int = 16
    batch_tokens: int = 2048
    options: dict[str, Any] = field(default_factory=dict)
    """Passed to the family's ``generate`` (e.g. agent's ``functions``)."""
    extras: float = 1.0
    """Scale of the families the specialist is also trained with (``TRAINED_WITH``): each adds
    ``extras`` × its own recipe's examples; 0 leaves them out."""


class Family(ABC):
    """One kind of work. Example::

        from molt.families import FAMILIES
        chat = FAMILIES["chat"]
        case = chat.generate("heldout", 1, seed=0)[0]
        assert chat.score(case, case.answer)["score"] == 1.0
    """

    name: ClassVar[str]
    recipe: ClassVar[Recipe]
    max_tokens: ClassVar[int]
    """Room for the family's reference answers, with margin: what benches ask the model for."""
    withheld: ClassVar[str]
    """What the ``heldout`` split withholds from train, in words (printed by the benches)."""

    @abstractmethod
    def generate(self, split: Split, n: int, seed: int = 0, **options: Any) -> list[Case]:
        """``n`` cases of ``split``, the same for the same arguments."""

    @abstractmethod
    def score(self, case: Case, message: Message) -> dict[str, float]:
        """Scores of one answer; ``score`` in [0, 1] is the headline."""

    def summarise(self, scores: list[dict[str, float]]) -> dict[str, float]:
        """Means over a set (families add their own aggregate metrics)."""
        n = len(scores)
        return {"score": sum(s["score"] for s in scores) / n if n else 0.0, "n": float(n)}

    def failure(self, case: Case, message: Message) -> str:
        """What went wrong with an answer that did not score 1 (``molt evolve`` groups failures by it)."""
        return "wrong answer"

    def summary_of(self, case: Case) -> str:
        """What the specialist did in ``case``: the short summary it learns for the summary hop."""
        return f"I told the user: {case.answer['content']}"

    def contents(self, case: Case) -> list[str]:
        """The texts of a case that must not leak from train into ``heldout``: the request and
        the answer's content, without the format the family teaches (JSON keys, code fences)."""
        return [m["content"] for m in case.messages if m["role"] == "user"] + [case.answer.get("content") or ""]

    def entities(self, case: Case) -> set[str]:
        """Named things of a case (functions, countries, labels…) that ``heldout`` must not share."""
        return set()


def rng_for(split: Split, seed: int, family: str) -> random.Random:
    """Separate random streams per split and family: held-out draws never repeat train draws."""
    return random.Random(f"{family}:{split}:{seed}")


SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, values: dict[str, Any]) -> str:
    return SLOT.sub(lambda m: str(values[m.group(1)]), template)


def slots(template: str) -> list[str]:
    return SLOT.findall(template)
