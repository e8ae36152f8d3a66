"""One SFT recipe per default specialist: how many generated examples and how to train on them.

Sized to finish in minutes on two CPU cores (bf16, packed batches): the figures are the
smallest that beat the base clearly on the held-out split (``molt bench specialists``).
"""

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Recipe:
    examples: int
    epochs: int = 1
    learning_rate: float = 2e-3
    rank: int = 16
    batch_tokens: int = 2048
    options: dict[str, Any] = field(default_factory=dict)
    """Passed to the family's generator (e.g. agent's ``functions``)."""


RECIPES = {
    "chat": Recipe(examples=120, epochs=2, batch_tokens=1024),
    "agent": Recipe(examples=200, learning_rate=3e-3),
    "coding": Recipe(examples=160, epochs=2),
    "genui": Recipe(examples=120, epochs=2, learning_rate=3e-3),
}
