"""Seeded data families for the four default specialists (train and held-out splits)."""

from collections.abc import Callable

from molt.datagen import agent, chat, coding, genui
from molt.datagen.common import SPLITS, Case, Split

FAMILIES: dict[str, Callable[[Split, int, int], list[Case]]] = {
    "chat": chat.generate,
    "agent": agent.generate,
    "coding": coding.generate,
    "genui": genui.generate,
}

__all__ = ["FAMILIES", "SPLITS", "Case", "Split"]
