"""Expansion: where does the current pair fail, and does a harness edit fix it?

The pair answers the bank greedily; each failure is attributed by its family (``no call``,
``wrong tool``, ``wrong arguments``, ``failing test``, ``invalid surface``…). Each failure kind
present proposes one HCP edit, an instruction added to the target's prompt. An edit is tried on
the failing slice and on a search split (the family's ``wording`` split: trained things in new
words, never the contract's held-out suites); it is kept only when it fixes some of the slice and
raises the search score. At most one edit is kept per generation, the best.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from molt.evolve.answering import Specialist, greedy, score
from molt.families import ALL_FAMILIES, Case
from molt.hcp import HCP

EDITS: dict[str, str] = {
    "no call": "When one of the offered functions can do what the user asks, call it rather than answering in words.",
    "wrong tool": "Choose the function whose name and description match the request; ignore the other functions on offer.",
    "wrong arguments": "Copy every argument value exactly as the user wrote it, and fill every required parameter.",
    "spurious call": "If no offered function fits the request, call nothing and say in words that you cannot do it here.",
    "repeated call": "After a function has returned its result, answer the user from that result without calling again.",
    "facts missing": "When a function has returned, state every value it returned in your answer.",
    "vague refusal": "When you cannot do something here, say so plainly and name what was asked.",
    "failing test": "Before you answer, check the code against every example in the request.",
    "no code block": "Answer with the complete function in one fenced Python code block.",
    "invalid surface": "Answer with one valid surface document only, using the catalog's components.",
    "surface misses the request": "Include a component for every field and action the user asks for.",
    "wrong answer": "Answer exactly what was asked, briefly.",
}


@dataclass(frozen=True)
class Trial:
    failure: str
    instruction: str
    fixed: int
    """Failing bank cases the edit solves."""
    search: float
    """Search-split score with the edit."""
    kept: bool


@dataclass(frozen=True)
class Expansion:
    failures: dict[str, int]
    """Failure kind → count on the bank."""
    bank_score: float
    search_before: float
    trials: list[Trial] = field(default_factory=list)
    instruction: str | None = None
    """The kept edit's instruction (None: no edit helped)."""


def edited(hcp: HCP, label: str, instruction: str) -> HCP:
    """``hcp`` with ``instruction`` added to ``label``'s own prompt."""
    specialists = [s.model_copy(update={"prompt": f"{s.prompt}\n{instruction}".strip()}) if s.label == label else s for s in hcp.specialists]
    return hcp.model_copy(update={"specialists": specialists})


def expand(who: Specialist, hcp: HCP, label: str, bank: list[Case], search: list[Case], max_trials: int, on_case: Callable[[], None] = lambda: None) -> Expansion:
    answers = greedy(who, bank, on_case)
    failing = [(case, answer) for case, answer in zip(bank, answers) if score(case, answer) < 1.0]
    kinds = Counter(ALL_FAMILIES[case.family].failure(case, answer) for case, answer in failing)
    bank_score = 1 - len(failing) / len(bank) if bank else 0.0
    search_before = _mean(who, search, on_case)
    trials: list[Trial] = []
    for kind, _ in kinds.most_common(max_trials):
        instruction = EDITS.get(kind)
        if instruction is None or instruction in hcp.specialist(label).prompt:
            continue
        trying = who.with_system(edited(hcp, label, instruction).system_prompt(label))
        slice_cases = [case for case, _ in failing]
        fixed = sum(score(c, a) == 1.0 for c, a in zip(slice_cases, greedy(trying, slice_cases, on_case)))
        with_edit = _mean(trying, search, on_case)
        trials.append(Trial(kind, instruction, fixed, with_edit, False))
    best = max((t for t in trials if t.fixed > 0 and t.search > search_before), key=lambda t: (t.search, t.fixed), default=None)
    trials = [Trial(t.failure, t.instruction, t.fixed, t.search, t is best) for t in trials]
    return Expansion(dict(kinds), bank_score, search_before, trials, best.instruction if best else None)


def _mean(who: Specialist, cases: list[Case], on_case: Callable[[], None]) -> float:
    return sum(score(c, a) for c, a in zip(cases, greedy(who, cases, on_case))) / len(cases) if cases else 0.0
