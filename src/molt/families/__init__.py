"""The data families of the default specialists: one object per kind of work (``base.Family``).

``FAMILIES`` maps a specialist label to its family; benches, the bootstrap, the router's
training data and RL environments take families from here. ``TRAINED_WITH`` adds families a
specialist is also trained on (the agent learns multi-step business tasks in both action modes).
"""

from molt.families.agent import FAMILY as AGENT
from molt.families.business import FAMILY as BUSINESS
from molt.families.base import SPLITS, Case, Family, Recipe, Split
from molt.families.chat import FAMILY as CHAT
from molt.families.coding import FAMILY as CODING
from molt.families.genui import FAMILY as GENUI

FAMILIES: dict[str, Family] = {f.name: f for f in (CHAT, AGENT, CODING, GENUI)}
TRAINED_WITH: dict[str, tuple[Family, ...]] = {"agent": (BUSINESS,)}
ALL_FAMILIES: dict[str, Family] = {**FAMILIES, **{f.name: f for extra in TRAINED_WITH.values() for f in extra}}

__all__ = ["ALL_FAMILIES", "FAMILIES", "TRAINED_WITH", "SPLITS", "Case", "Family", "Recipe", "Split"]
