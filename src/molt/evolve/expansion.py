"""Expansion: where does the current pair fail, and does a harness edit fix it?

The pair answers the bank greedily; each failure is attributed by its family (``no call``,
``wrong tool``, ``wrong arguments``, ``failing test``, ``invalid surface``…). Each failure kind
present proposes HCP edits to the target's prompt, of two kinds:

- ``instruction``: a rule against that kind of failure (``EDITS``);
- ``example``: a worked few-shot example, one failing bank case's request and reference answer.

An edit is tried on the failing slice and on a search split (the family's ``wording`` split:
trained things in new words, never the contract's held-out suites); it is kept only when it fixes
some of the slice and raises the search score. At most one edit is kept per generation, the best.
Edits to tool descriptions and router examples are not searched: the bank's functions come with
each request, and the router is a trained classifier that a prompt edit does not reach.
"""

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace

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
    """The text the edit adds to the target's prompt."""
    fixed: int
    """Failing bank cases the edit solves."""
    search: float
    """Search-split score with the edit."""
    kept: bool
    kind: str = "instruction"
    """``instruction`` or ``example``."""


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
    attributed = [(case, ALL_FAMILIES[case.family].failure(case, answer)) for case, answer in failing]
    kinds = Counter(kind for _, kind in attributed)
    bank_score = 1 - len(failing) / len(bank) if bank else 0.0
    search_before = _mean(who, search, on_case)
    prompt = hcp.specialist(label).prompt
    trials: list[Trial] = []
    slice_cases = [case for case, _ in failing]
    for failure, kind, text in proposals(attributed, max_trials):
        if text in prompt:
            continue
        trying = who.with_system(edited(hcp, label, text).system_prompt(label))
        fixed = sum(score(c, a) == 1.0 for c, a in zip(slice_cases, greedy(trying, slice_cases, on_case)))
        trials.append(Trial(failure, text, fixed, _mean(trying, search, on_case), False, kind))
    best = max((t for t in trials if t.fixed > 0 and t.search > search_before), key=lambda t: (t.search, t.fixed), default=None)
    trials = [replace(t, kept=t is best) for t in trials]
    return Expansion(dict(kinds), bank_score, search_before, trials, best.instruction if best else None)


def proposals(attributed: list[tuple[Case, str]], max_trials: int) -> list[tuple[str, str, str]]:
    """(failure kind, edit kind, text) to try, at most ``max_trials``, from failing cases and
    their kinds: the instruction for each of the most frequent kinds, and in the last slot a
    worked example of the most frequent one."""
    ranked = [kind for kind, _ in Counter(kind for _, kind in attributed).most_common()]
    found = [(kind, "instruction", EDITS[kind]) for kind in ranked if kind in EDITS][:max(max_trials - 1, 0)]
    examples = (worked_example(case) for case, kind in attributed if kind == ranked[0]) if ranked else iter(())
    example = next((text for text in examples if text), None)
    if example and max_trials > 0:
        found.append((ranked[0], "example", example))
    return found


def worked_example(case: Case, limit: int = 400) -> str | None:
    """A one-turn bank case as a few-shot example for the prompt (None: too long or not one turn)."""
    if len(case.messages) != 1 or not isinstance(case.request, str):
        return None
    calls = case.answer.get("tool_calls") or []
    answer = " ".join(f"call {c['function']['name']} with {c['function']['arguments']}" for c in calls) or (case.answer.get("content") or "")
    text = f"Example. Request: {case.request} Answer: {answer}"
    return text if answer and len(text) <= limit else None


def _mean(who: Specialist, cases: list[Case], on_case: Callable[[], None]) -> float:
    return sum(score(c, a) for c, a in zip(cases, greedy(who, cases, on_case))) / len(cases) if cases else 0.0
