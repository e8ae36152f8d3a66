"""The data families of the default specialists: one object per kind of work (``base.Family``).

``FAMILIES`` maps a specialist label to its family; benches, the bootstrap, the router's
training data and RL environments take families from here.
"""

from molt.families.agent import FAMILY as AGENT
from molt.families.base import SPLITS, Case, Family, Recipe, Split
from molt.families.chat import FAMILY as CHAT
from molt.families.coding import FAMILY as CODING
from molt.families.genui import FAMILY as GENUI

FAMILIES: dict[str, Family] = {f.name: f for f in (CHAT, AGENT, CODING, GENUI)}

__all__ = ["FAMILIES", "SPLITS", "Case", "Family", "Recipe", "Split"]
