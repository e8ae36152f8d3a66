"""Outside-style routing data: labelled turns in the styles molt's own families do not use.

The families' requests are molt's own: one register, one language, a fixed set of functions.
Requests written elsewhere come in other domains, languages, registers and lengths, offer their
own functions, and carry a conversation. This corpus generates such turns from seeded templates
and vocabularies (data is code: never model output, never downloaded): invented OpenAI tool
schemas in many domains, questions with functions offered that need none of them, coding
problems and tracebacks, dashboards and forms of unseen entities, and multi-turn cases (a detail
recalled from earlier, a surface to change, code to extend, a tool result to use).

**Split by domain and style.** Every turn is tagged with its domain, topic, style, language and
kind (``kind:`` tags are shapes shared on purpose). The held-out split draws only from domains,
topics, styles and non-English languages that train never uses, with its own templates, so its
accuracy measures generalisation to requests unlike any trained on (``tests/router``).

Example::

    from molt.router.corpus import generate
    turn = generate("heldout", 1, seed=0, labels=["agent"])[0]
    assert turn.label == "agent" and turn.request.tools
"""

import random
from dataclasses import dataclass

from molt.router.base import RouteRequest
from molt.router.corpus.domains import DOMAINS, CorpusSplit
from molt.router.corpus.kinds import KINDS, Draw

LABELS = tuple(KINDS)
SEPARATED = ("domain:", "topic:", "style:", "lang:")
"""Tag kinds that no held-out turn shares with train (English, ``lang:en``, excepted)."""


@dataclass(frozen=True)
class Turn:
    label: str
    request: RouteRequest
    tags: frozenset[str]


def generate(split: CorpusSplit, per_label: int, seed: int = 0, labels: list[str] | tuple[str, ...] = LABELS) -> list[Turn]:
    """``per_label`` turns of each of ``labels`` (those this corpus knows), the same for the same arguments."""
    if split not in ("train", "heldout"):
        raise ValueError(f"the routing corpus has splits 'train' and 'heldout', not {split!r}")
    turns = []
    for label in (l for l in labels if l in KINDS):
        rng = random.Random(f"router-corpus:{split}:{seed}:{label}")
        kinds, weights = list(KINDS[label]), list(KINDS[label].values())
        for _ in range(per_label):
            kind = rng.choices(kinds, weights)[0]
            built = kind(Draw(rng, split, kind.__name__))
            turns.append(Turn(label, RouteRequest.of(built.messages, built.tools), built.tags))
    return turns


def tool_names(turns: list[Turn]) -> set[str]:
    """Every function name offered in ``turns``."""
    return {t["function"]["name"] for turn in turns for t in turn.request.tools}


__all__ = ["DOMAINS", "LABELS", "SEPARATED", "Turn", "generate", "tool_names"]
