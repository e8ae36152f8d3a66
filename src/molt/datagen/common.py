"""What every data family shares: the case type, the two splits and seeded template filling.

A family is a Python module that writes conversations from templates and vocabularies, so its
data is code: reproducible from a seed, never model output. Each family keeps two disjoint sets
of request templates: the ``train`` split fills only the train templates from seed ``s`` and the
``heldout`` split fills only the held-out ones from a different seed stream, so a held-out case
shares neither its wording nor its random draws with anything trained on.
"""

import random
import re
from dataclasses import dataclass, field
from typing import Any, Literal

Split = Literal["train", "heldout"]
SPLITS: tuple[Split, ...] = ("train", "heldout")
Message = dict[str, Any]


@dataclass(frozen=True)
class Case:
    family: str
    messages: list[Message]
    """The conversation up to the turn the model must write (system prompt not included)."""
    answer: Message
    """The reference assistant message for that turn (trained on; the evaluator may use it)."""
    tools: list[dict] | None = None
    check: dict[str, Any] = field(default_factory=dict)
    """What the family's evaluator needs: expected calls, tests, required words…"""

    @property
    def request(self) -> str:
        """The user's text of the first turn: what the router sees."""
        return next(m["content"] for m in self.messages if m["role"] == "user")

    def training_row(self, system: str) -> dict:
        """One line of chat JSONL for MinT SFT: the system prompt, the conversation, the answer."""
        row = {"messages": [{"role": "system", "content": system}, *self.messages, self.answer]}
        return {**row, "tools": self.tools} if self.tools else row


def rng_for(split: Split, seed: int, family: str) -> random.Random:
    """Separate random streams per split and family: held-out draws never repeat train draws."""
    return random.Random(f"{family}:{split}:{seed}")


SLOT = re.compile(r"\{(\w+)\}")


def fill(template: str, values: dict[str, Any]) -> str:
    return SLOT.sub(lambda m: str(values[m.group(1)]), template)


def slots(template: str) -> list[str]:
    return SLOT.findall(template)
