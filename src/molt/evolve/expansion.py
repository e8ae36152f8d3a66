"""Expansion: where does the current pair fail, and does a harness edit fix it?

The pair answers the bank greedily; each failure is attributed by its family (``no call``,
``wrong tool``, ``wrong arguments``, ``failing test``, ``invalid surface``…). The failure kinds
present propose HCP edits of three kinds:

- ``instruction``: a rule against that kind of failure (``EDITS``) in the target's prompt;
- ``example``: a worked few-shot example in the target's prompt, one failing bank case's request
  and reference answer;
- ``tool_description``: for a wrong tool or wrong arguments, the harness's own, fuller description
  of the function the case needed (HCP ``[tools] descriptions``, used in place of the client's
  whenever that function is offered).

An edit is tried on the failing slice and on a search split (the family's ``wording`` split:
trained things in new words, never the contract's held-out suites); it is kept only when it fixes
some of the slice and raises the search score. At most one edit is kept per generation, the best.
Router examples are not searched: the router is a trained classifier, retrained apart from this
loop, and the contract's routing guard watches it.
"""

import json
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
class Edit:
    failure: str
    """The failure kind it answers."""
    kind: str
    """``instruction``, ``example`` or ``tool_description``."""
    text: str
    function: str | None = None
    """The function a ``tool_description`` describes."""
    source: str | None = None
    """The request of the bank case an example or a description was made from: it does not
    count as fixed (the edit holds its answer)."""

    def applied(self, hcp: HCP, label: str) -> HCP:
        """``hcp`` with this edit: in ``label``'s own prompt (a worked example replaces an
        earlier one, so examples do not pile up across generations), or in ``[tools] descriptions``."""
        if self.kind == "tool_description":
            tools = hcp.tools.model_copy(update={"descriptions": {**hcp.tools.descriptions, self.function: self.text}})
            return hcp.model_copy(update={"tools": tools})
        def prompt(old: str) -> str:
            kept = [line for line in old.splitlines() if not (self.kind == "example" and line.startswith(EXAMPLE))]
            return "\n".join([*kept, self.text]).strip()
        specialists = [s.model_copy(update={"prompt": prompt(s.prompt)}) if s.label == label else s for s in hcp.specialists]
        return hcp.model_copy(update={"specialists": specialists})

    def present_in(self, hcp: HCP, label: str) -> bool:
        if self.kind == "tool_description":
            return hcp.tools.descriptions.get(self.function) == self.text
        return self.text in hcp.specialist(label).prompt


@dataclass(frozen=True)
class Trial:
    edit: Edit
    fixed: int
    """Failing bank cases the edit solves."""
    search: float | None
    """Search-split score with the edit (None: it fixed nothing on the slice, so it was not searched)."""
    kept: bool


@dataclass(frozen=True)
class Expansion:
    failures: dict[str, int]
    """Failure kind → count on the bank."""
    bank_score: float
    search_before: float
    trials: list[Trial] = field(default_factory=list)
    kept: Edit | None = None
    """The edit kept (None: no edit helped)."""


def expand(who: Specialist, hcp: HCP, label: str, bank: list[Case], search: list[Case], max_trials: int, on_case: Callable[[], None] = lambda: None) -> Expansion:
    answers = greedy(who, bank, on_case)
    failing = [(case, answer) for case, answer in zip(bank, answers) if score(case, answer) < 1.0]
    attributed = [(case, ALL_FAMILIES[case.family].failure(case, answer)) for case, answer in failing]
    kinds = Counter(kind for _, kind in attributed)
    bank_score = 1 - len(failing) / len(bank) if bank else 0.0
    search_before = _mean(who, search, on_case)
    trials: list[Trial] = []
    for edit in proposals(attributed, max_trials):
        if edit.present_in(hcp, label):
            continue
        trying = who.under(edit.applied(hcp, label), label)
        slice_cases = [case for case, _ in failing if case.request != edit.source]
        fixed = sum(score(c, a) == 1.0 for c, a in zip(slice_cases, greedy(trying, slice_cases, on_case)))
        if fixed == 0:  # it cannot be kept, so the search split is not spent on it
            for _ in search:
                on_case()
        trials.append(Trial(edit, fixed, _mean(trying, search, on_case) if fixed else None, False))
    best = max((t for t in trials if t.fixed > 0 and t.search is not None and t.search > search_before), key=lambda t: (t.search, t.fixed), default=None)
    trials = [replace(t, kept=t is best) for t in trials]
    return Expansion(dict(kinds), bank_score, search_before, trials, best.edit if best else None)


def proposals(attributed: list[tuple[Case, str]], max_trials: int) -> list[Edit]:
    """The edits to try, at most ``max_trials``, from failing cases and their kinds: the
    instruction for each of the most frequent kinds; in the last slot, for the most frequent kind,
    a tool description (a wrong tool or wrong arguments) or else a worked example, when one can be
    made (otherwise that slot is one more instruction)."""
    ranked = [kind for kind, _ in Counter(kind for _, kind in attributed).most_common()]
    instructions = [Edit(kind, "instruction", EDITS[kind]) for kind in ranked if kind in EDITS]
    makers = (tool_description, worked_example) if ranked and ranked[0] in TOOL_FAILURES else (worked_example,)
    last = next((edit for make in makers for case, kind in attributed if ranked and kind == ranked[0] and (edit := make(case, kind))), None)
    if last is None or max_trials < 1:
        return instructions[:max(max_trials, 0)]
    return [*instructions[:max_trials - 1], last]


TOOL_FAILURES = ("wrong tool", "wrong arguments")
EXAMPLE = "Example. Request:"


def worked_example(case: Case, failure: str, limit: int = 400) -> Edit | None:
    """A one-turn bank case as a few-shot example for the prompt (None: too long or not one turn)."""
    if len(case.messages) != 1 or not isinstance(case.request, str):
        return None
    calls = case.answer.get("tool_calls") or []
    answer = " ".join(f"call {c['function']['name']} with {c['function']['arguments']}" for c in calls) or (case.answer.get("content") or "")
    text = f"{EXAMPLE} {case.request} Answer: {answer}"
    return Edit(failure, "example", text, source=case.request) if answer and len(text) <= limit else None


def tool_description(case: Case, failure: str) -> Edit | None:
    """A fuller description of the function ``case`` needed, from its schema: what it is for, then
    each parameter with its type, whether it is required and an example value (the reference's)."""
    calls = case.check.get("calls") or []
    if not calls:
        return None
    name, used = calls[0]["name"], calls[0]["arguments"]
    schema = next((f for t in case.tools or [] if (f := t.get("function") or {}).get("name") == name), None)
    if schema is None:
        return None
    parameters = schema.get("parameters") or {}
    required = set(parameters.get("required") or [])
    described = []
    for param, spec in (parameters.get("properties") or {}).items():
        example = f", e.g. {json.dumps(used[param])}" if param in used else ""
        described.append(f"{param} ({spec.get('type', 'any')}, {'required' if param in required else 'optional'}{example})")
    what = (schema.get("description") or name.replace("_", " ")).rstrip(".")
    text = f"{what}. Call it only for exactly that. Arguments: {'; '.join(described) or 'none'}. Copy values as the user wrote them."
    return Edit(failure, "tool_description", text, name, source=case.request)


def kept_edit(expansion: dict) -> Edit | None:
    """The edit an expansion phase kept, from its ``state.json`` entry (older generations stored
    only an instruction's text)."""
    if expansion.get("kept"):
        return Edit(**expansion["kept"])
    return Edit("", "instruction", expansion["instruction"]) if expansion.get("instruction") else None


def _mean(who: Specialist, cases: list[Case], on_case: Callable[[], None]) -> float:
    return sum(score(c, a) for c, a in zip(cases, greedy(who, cases, on_case))) / len(cases) if cases else 0.0
