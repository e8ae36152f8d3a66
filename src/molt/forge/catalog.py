"""The environments ``molt rl`` knows, by name: which specialist each trains, how long its
answers may be, and how to build its train and held-out problems."""

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from molt.families import FAMILIES
from molt.families.base import Split
from molt.forge.envs import FamilyDataset, ProblemDataset
from molt.forge.business import BusinessDataset
from molt.forge.living import LivingDataset
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
    train_split: Split = "train"
    """The family split RL trains on. Its held-out problems are always the ``heldout`` split."""


ENVS = {
    # The agent specialist was fine-tuned on the train split and answers most of it (0.87 greedy):
    # its groups carry little signal. The wording split asks the same trained functions in words
    # it never saw (0.73), and shares no function, value or template with the held-out split.
    "tool_calls": EnvSpec("agent", FAMILIES["agent"].max_tokens, partial(FamilyDataset, "agent"), "the right call, or none when no offered function fits", "wording"),
    "unit_tests": EnvSpec("coding", FAMILIES["coding"].max_tokens, partial(FamilyDataset, "coding"), "the answer's code passes hidden tests in the sandbox"),
    "surfaces": EnvSpec("genui", FAMILIES["genui"].max_tokens, partial(FamilyDataset, "genui"), "a valid surface that meets the request"),
    "order_refund": EnvSpec("agent", 128, OrderDataset, "multi-turn: look the order id up, then refund exactly that order"),
    "business": EnvSpec("agent", 256, BusinessDataset, "multi-step business tasks with exact answers, by function calls or code in a sandboxed session"),
    "living": EnvSpec("agent", 128, LivingDataset, "life-assistant scenarios across sessions with a scripted user and noise: 0.7 need + 0.3 process"),
}
