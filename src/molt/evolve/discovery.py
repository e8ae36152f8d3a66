"""Discovery: harder variants of the problem bank, kept only where they teach something.

Each operator turns a bank case into a variant with the same verifier (the family's scorer and
the case's check): the reference answer must still pass it, or the variant is not well defined and
is dropped. A well-defined variant is kept when the current pair does not reliably solve it: fewer
than all of ``k`` sampled answers pass.

Operators (the ones that keep an exact verifier for every family):

- ``distractor_tools``: more functions on offer, taken from other bank cases;
- ``earlier_goal``: a finished earlier request and its answer before the case's own (a chained
  conversation where only the last goal is open);
- ``restated``: the request said twice, the second time with a correction that repeats it
  (the user contradicts their own hedge: "no wait — exactly that").
"""

import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from molt.evolve.answering import Specialist, sampled, score
from molt.families import Case

OPERATORS = ("distractor_tools", "earlier_goal", "restated")


@dataclass(frozen=True)
class Variant:
    operator: str
    source: int
    """Index of the bank case it was made from."""
    case: Case


def distractor_tools(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    if not case.tools:
        return None
    names = {t["function"]["name"] for t in case.tools}
    extra = {t["function"]["name"]: t for other in bank for t in other.tools or [] if t["function"]["name"] not in names}
    if not extra:
        return None
    chosen = rng.sample(sorted(extra), min(3, len(extra)))
    tools = [*case.tools, *(extra[name] for name in chosen)]
    rng.shuffle(tools)
    return replace(case, tools=tools)


def earlier_goal(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    finished = [c for c in bank if c is not case and len(c.messages) == 1 and c.answer.get("content") and not c.answer.get("tool_calls") and c.family == case.family]
    if not finished:
        return None
    earlier = rng.choice(finished)
    return replace(case, messages=[*earlier.messages, earlier.answer, *case.messages])


def restated(case: Case, bank: list[Case], rng: random.Random) -> Case | None:
    first = case.messages[0]
    if first["role"] != "user" or not isinstance(first["content"], str):
        return None
    hedge = rng.choice(["Hmm, or maybe not. No wait, do exactly this: ", "Scratch my doubts, I mean it: ", "Let me say it again, this is what I want: "])
    return replace(case, messages=[{**first, "content": f"{first['content']}\n\n{hedge}{first['content']}"}, *case.messages[1:]])


MAKERS: dict[str, Callable[[Case, list[Case], random.Random], Case | None]] = {
    "distractor_tools": distractor_tools, "earlier_goal": earlier_goal, "restated": restated,
}


def propose(bank: list[Case], per_case: int, seed: int) -> list[Variant]:
    """Up to ``per_case`` well-defined variants of each bank case (the reference passes)."""
    rng = random.Random(f"discovery:{seed}")
    variants = []
    for i, case in enumerate(bank):
        for operator in rng.sample(OPERATORS, min(per_case, len(OPERATORS))):
            made = MAKERS[operator](case, bank, rng)
            if made is not None and score(made, made.answer) == 1.0:
                variants.append(Variant(operator, i, made))
    return variants


@dataclass(frozen=True)
class Discovered:
    proposed: int
    kept: list[Variant]
    solve_rate: list[float]
    """Per kept variant: the share of the ``k`` samples that passed."""


def discover(who: Specialist, bank: list[Case], per_case: int, k: int, temperature: float, seed: int, on_case: Callable[[], None] = lambda: None) -> Discovered:
    variants = propose(bank, per_case, seed)
    groups = sampled(who, [v.case for v in variants], k, temperature, on_case)
    kept, rates = [], []
    for variant, answers in zip(variants, groups):
        rate = sum(score(variant.case, a) for a in answers) / k
        if rate < 1.0:
            kept.append(variant)
            rates.append(rate)
    return Discovered(len(variants), kept, rates)
