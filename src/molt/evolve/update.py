"""Update: experience that went right becomes the target specialist's next adapter revision.

The dataset holds, for the bank and the kept discovery variants: the current pair's own sampled
answers that pass the verifier (at most ``per_problem`` distinct ones per problem; rejection
sampling, as in STaR and expert iteration), the verified reference of each kept variant (the
pair failed it, and its reference passes by construction), and the deployment turns of the target
that users rated up. Discovery varies mostly one kind of problem (the agent's calls), so the
set would lean to it and the specialist would drift on the others (measured: held-out calls +16
points, no-call answers −13 and answers from a tool result −20); verified references of more
train-split problems (``pool``) bring each kind back to its share of the bank, a rehearsal of
what the specialist was trained on. Rows are de-duplicated, checked against the contract (a row that shares a
request or an answer with a held-out suite refuses the whole set), written as chat JSONL and
registered. MinT SFT then trains from the current revision's weights, the base frozen.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
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
    rehearsed: int
    """Train-split references added so each kind of problem keeps its share of the bank."""
    rated: int
    """Rows from positively rated deployment turns."""
    dropped_overlap: int
    """Rated turns left out because they hold held-out text (users may type anything)."""


def row_key(row: dict) -> str:
    return hashlib.sha256(json.dumps(row["messages"], sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def kind_of(case: Case) -> str:
    """The kind of problem (the agent's ``call``, ``no_call``, ``result``); one kind for families without kinds."""
    return str(case.check.get("kind", case.family))


def collect(
    who: Specialist, bank: list[Case], variants: list[Case], rated: list[dict], contract: Contract,
    k: int, temperature: float, per_problem: int, on_case: Callable[[], None] = lambda: None, pool: Sequence[Case] = (),
) -> Collected:
    """``k`` samples of each bank problem and variant, the variants' references, rehearsal from ``pool``, rated turns."""
    problems, rows, solved, kinds = bank + variants, [], 0, {}
    for case, answers in zip(problems, sampled(who, problems, k, temperature, on_case)):
        passing = [a for a in answers if score(case, a) == 1.0]
        solved += bool(passing)
        for answer in passing:
            rows.append(replace(who.served(case), answer=answer_fields(answer)).training_row(who.system))
            kinds[row_key(rows[-1])] = kind_of(case)
    rows = _distinct_per_problem(rows, per_problem)
    for case in variants:
        rows.append(who.served(case).training_row(who.system))
        kinds[row_key(rows[-1])] = kind_of(case)
    rehearsed = rehearsal(Counter(kinds[key] for key in {row_key(row) for row in rows}), bank, pool)
    rows += [who.served(case).training_row(who.system) for case in rehearsed]
    heldout = HeldOut(contract)
    overlapping = {o.row for o in heldout.overlaps(rated)}
    rows += [row for i, row in enumerate(rated) if i not in overlapping]
    seen, distinct = set(), []
    for row in rows:
        if (key := row_key(row)) not in seen:
            seen.add(key)
            distinct.append(row)
    heldout.check(distinct, "the update's dataset")
    return Collected(distinct, solved, len(variants), len(rehearsed), len(rated) - len(overlapping), len(overlapping))


def rehearsal(have: Counter, bank: list[Case], pool: Sequence[Case]) -> list[Case]:
    """Problems of ``pool`` that bring each kind of problem to its share of the bank, scaled to the
    kind with the most rows per bank problem (as many as ``pool`` holds)."""
    share = Counter(kind_of(case) for case in bank)
    scale = max((have[kind] / n for kind, n in share.items()), default=0)
    chosen = []
    for kind, n in share.items():
        chosen += [case for case in pool if kind_of(case) == kind][: max(0, round(scale * n) - have[kind])]
    return chosen


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
