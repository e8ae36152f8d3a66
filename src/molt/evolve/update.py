"""Update: experience that went right becomes the target specialist's next adapter revision.

The dataset holds, for the bank and the kept discovery variants: the current pair's own sampled
answers that pass the verifier (at most ``per_problem`` distinct ones per problem; rejection
sampling, as in STaR and expert iteration), the verified reference of each kept variant (the
pair failed it, and its reference passes by construction), and the deployment turns of the target
that users rated up. Rows are de-duplicated, checked against the contract (a row that shares a
request or an answer with a held-out suite refuses the whole set), written as chat JSONL and
registered. MinT SFT then trains from the current revision's weights, the base frozen.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from molt.evolve.answering import Specialist, sampled, score
from molt.evolve.contract import Contract, HeldOut
from molt.experience.log import answer_fields
from molt.families import Case
from molt.home import write_atomic


@dataclass(frozen=True)
class Collected:
    rows: list[dict]
    sampled_ok: int
    """Problems with at least one passing sample."""
    references: int
    rated: int
    """Rows from positively rated deployment turns."""
    dropped_overlap: int
    """Rated turns left out because they hold held-out text (users may type anything)."""


def row_key(row: dict) -> str:
    return hashlib.sha256(json.dumps(row["messages"], sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def collect(
    who: Specialist, problems: list[Case], references: list[Case], rated: list[dict], contract: Contract,
    k: int, temperature: float, per_problem: int, on_case: Callable[[], None] = lambda: None,
) -> Collected:
    rows, solved = [], 0
    for case, answers in zip(problems, sampled(who, problems, k, temperature, on_case)):
        passing = [a for a in answers if score(case, a) == 1.0]
        solved += bool(passing)
        rows += [replace(who.served(case), answer=answer_fields(answer)).training_row(who.system) for answer in passing]
    rows = _distinct_per_problem(rows, per_problem)
    rows += [who.served(case).training_row(who.system) for case in references]
    heldout = HeldOut(contract)
    overlapping = {o.row for o in heldout.overlaps(rated)}
    rows += [row for i, row in enumerate(rated) if i not in overlapping]
    seen, distinct = set(), []
    for row in rows:
        if (key := row_key(row)) not in seen:
            seen.add(key)
            distinct.append(row)
    heldout.check(distinct, "the update's dataset")
    return Collected(distinct, solved, len(references), len(rated) - len(overlapping), len(overlapping))


def _distinct_per_problem(rows: list[dict], per_problem: int) -> list[dict]:
    """At most ``per_problem`` distinct passing answers per problem (the prompt is all but the last message)."""
    count: dict[str, int] = {}
    kept, seen = [], set()
    for row in rows:
        prompt = hashlib.sha256(json.dumps(row["messages"][:-1], sort_keys=True).encode()).hexdigest()
        key = row_key(row)
        if key in seen or count.get(prompt, 0) >= per_problem:
            continue
        seen.add(key)
        count[prompt] = count.get(prompt, 0) + 1
        kept.append(row)
    return kept


def write_rows(path: Path, rows: list[dict]) -> Path:
    return write_atomic(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
