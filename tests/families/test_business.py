"""The business family: every reference REPL program prints its task's answer in the real sandbox,
the held-out world shares no kind, function or name with train, and the scorer takes only the
exact answer. Run: pytest tests/families/test_business.py"""

import json

import pytest

from molt.families.business import FAMILY, HELDOUT_KINDS, TRAIN_KINDS, right_answer, tasks, world_of
from molt.harness.actions import PYTHON
from molt.harness.substrate import Limits, Substrate


@pytest.mark.parametrize("split", ["train", "heldout"])
def test_each_reference_program_prints_its_answer_in_the_sandbox(split, tmp_path):
    world = world_of(split)
    substrate = Substrate(tmp_path, Limits(wall_s=20), host=lambda key: lambda op, fields: world.call(fields["name"], fields["arguments"]))
    try:
        for task in tasks(split, 16):
            outcome = substrate.run(task.kind, task.code)
            assert outcome.error is None and outcome.output.strip() == task.output, (task.kind, outcome)
    finally:
        substrate.close()


def test_the_heldout_split_has_kinds_and_functions_of_its_own():
    train, heldout = FAMILY.generate("train", 200), FAMILY.generate("heldout", 200)
    assert {c.check["kind"] for c in train} == set(TRAIN_KINDS) and {c.check["kind"] for c in heldout} == set(HELDOUT_KINDS)
    assert not set(TRAIN_KINDS) & set(HELDOUT_KINDS)
    functions = lambda cases: {t["function"]["name"] for c in cases for t in c.tools} - {PYTHON}  # noqa: E731
    assert functions(train) and functions(heldout) and not functions(train) & functions(heldout)


def test_both_modes_are_trained_and_the_repl_takes_fewer_steps():
    cases = FAMILY.generate("train", 400)
    steps = {mode: [c for c in cases if c.check["mode"] == mode] for mode in ("function_calling", "repl")}
    finals = {mode: sum(c.check["final"] for c in group) for mode, group in steps.items()}
    assert all(finals.values())
    assert len(steps["repl"]) / finals["repl"] < len(steps["function_calling"]) / finals["function_calling"]


def test_the_scorer_takes_only_the_exact_answer():
    world = world_of("heldout")
    assert right_answer("Stock on hand is worth 1234.56 USD.", 1234.56, world)
    assert not right_answer("It is worth 1234.5 USD.", 1234.56, world)
    assert not right_answer("", 3, world)
    assert not right_answer("Somewhere between 1 and 5, maybe 3 or 4.", 3, world)  # a spread of guesses
    assert not right_answer("3 or 4 of them.", 3, world)
    assert right_answer("Reorder these: SKU-V24, SKU-K12.", ["SKU-K12", "SKU-V24"], world)
    assert not right_answer("Reorder these: SKU-V24.", ["SKU-K12", "SKU-V24"], world)
    assert not right_answer("Maybe SKU-V24, SKU-K12 or SKU-Q13.", ["SKU-K12", "SKU-V24"], world)
    assert right_answer("The biggest is O-5012.", "O-5012", world_of("train"))
    assert not right_answer("One of O-5012, O-5013.", "O-5012", world_of("train"))


def test_a_final_step_with_a_call_or_an_intermediate_step_with_other_calls_fails():
    cases = FAMILY.generate("heldout", 60)
    final = next(c for c in cases if c.check["final"])
    assert FAMILY.score(final, final.answer)["score"] == 1.0
    calling = next(c for c in cases if not c.check["final"] and c.check["mode"] == "function_calling")
    assert FAMILY.score(final, calling.answer)["score"] == 0.0
    wrong = json.loads(json.dumps(calling.answer))
    wrong["tool_calls"][0]["function"]["arguments"] = json.dumps({"agent": "Nobody", "priority": "P1"})
    assert FAMILY.score(calling, calling.answer)["score"] == 1.0 and FAMILY.score(calling, wrong)["score"] == 0.0
