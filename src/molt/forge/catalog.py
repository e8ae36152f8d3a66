"""The environments ``molt rl`` knows, by name: which specialist each trains, how long its
answers may be, and how to build its train and held-out problems."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from molt.families import FAMILIES
from molt.families.base import Split
from molt.forge.envs import FamilyDataset, ProblemDataset
from molt.forge.orders import OrderDataset
from molt.hcp.contract import HCP
from molt.models.renderer import Renderer


@dataclass(frozen=True)
class EnvSpec:
    label: str
    """The specialist it trains; its problems are served under this label's HCP prompt."""
    max_tokens: int
    dataset: Callable[[Split, int, HCP, str, Renderer, int], ProblemDataset]
    """(split, size, hcp, label, renderer, seed) → problems."""
    about: str


ENVS = {
    "tool_calls": EnvSpec("agent", FAMILIES["agent"].max_tokens, partial(FamilyDataset, "agent"), "the right call, or none when no offered function fits"),
    "unit_tests": EnvSpec("coding", FAMILIES["coding"].max_tokens, partial(FamilyDataset, "coding"), "the answer's code passes hidden tests in the sandbox"),
    "surfaces": EnvSpec("genui", FAMILIES["genui"].max_tokens, partial(FamilyDataset, "genui"), "a valid surface that meets the request"),
    "order_refund": EnvSpec("agent", 128, OrderDataset, "multi-turn: look the order id up, then refund exactly that order"),
}
