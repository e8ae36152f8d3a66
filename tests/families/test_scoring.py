"""Each scorer rewards only what it claims to measure: ``.venv/bin/pytest tests/families/test_scoring.py``.

Every test here pins a loophole of the scorers molt had before (each answer below scored 1.0
there) and checks the strict scorer gives it 0, while the reference still gets 1.
"""

import json

from molt.families import FAMILIES
from molt.families.genui import build
from molt.harness.substrate.function_tests import run_tests

AGENT, CODING, GENUI = FAMILIES["agent"], FAMILIES["coding"], FAMILIES["genui"]


def first(family, kind: str, split: str = "heldout"):
    return next(c for c in family.generate(split, 200, 0) if c.check["kind"] == kind)


def say(text: str) -> dict:
    return {"role": "assistant", "content": text}


def test_an_empty_or_unrelated_answer_fails_a_no_call_case():
    case = first(AGENT, "no_call")
    assert AGENT.score(case, case.answer)["score"] == 1.0
    assert AGENT.score(case, say(""))["score"] == 0.0
    assert AGENT.score(case, say("The capital of France is Paris."))["score"] == 0.0
    assert AGENT.score(case, say("Sorry, I can't help with that."))["score"] == 0.0  # names nothing of the request


def test_a_result_value_counts_only_as_a_whole_token_in_context():
    weather = next(c for c in AGENT.generate("wording", 400, 0) if c.check["kind"] == "result" and c.check["function"] == "get_weather")
    temperature, condition = (f["value"] for f in weather.check["facts"])
    assert AGENT.score(weather, weather.answer)["score"] == 1.0
    assert AGENT.score(weather, say(f"It is 1{temperature} degrees and {condition}."))["score"] == 0.0  # substring of another number
    assert AGENT.score(weather, say(f"Result {temperature}, {condition}."))["score"] == 0.0  # the number without its meaning
    assert AGENT.score(weather, say(weather.messages[-1]["content"]))["score"] == 0.0  # the raw result echoed back


def test_no_call_precision_counts_only_call_and_no_call_cases():
    """A result case answered in words (as it should be) is not a correct no-call decision."""
    cases = AGENT.generate("heldout", 200, 0)
    call = next(c for c in cases if c.check["kind"] == "call")
    result = next(c for c in cases if c.check["kind"] == "result")
    no_call = next(c for c in cases if c.check["kind"] == "no_call")
    scores = [AGENT.score(call, say("I can't.")), AGENT.score(result, result.answer), AGENT.score(no_call, no_call.answer)]
    summary = AGENT.summarise(scores)
    assert summary["no_call_precision"] == 0.5  # 1 right of the 2 call/no-call cases answered without a call
    assert summary["no_call_recall"] == 1.0


def test_an_unrelated_valid_surface_fails_a_confirmation():
    confirm = first(GENUI, "confirm")
    other = next(c for c in GENUI.generate("heldout", 200, 0) if c.check["kind"] == "confirm" and c.check["what"] != confirm.check["what"])
    form = first(GENUI, "form")
    assert GENUI.score(confirm, confirm.answer)["score"] == 1.0
    assert GENUI.score(confirm, other.answer) == {"score": 0.0, "valid": 1.0}
    assert GENUI.score(confirm, form.answer) == {"score": 0.0, "valid": 1.0}


def test_a_surface_must_use_the_right_components_for_the_items():
    """The same items as a card of texts instead of checkboxes: valid, every item shown, wrong kind."""
    checklist = first(GENUI, "checklist")
    card = build({**checklist.check, "kind": "card"})
    assert GENUI.score(checklist, say(card)) == {"score": 0.0, "valid": 1.0}


def test_coding_answers_that_exit_early_or_fake_equality_fail():
    case = CODING.generate("heldout", 1, 0)[0]
    name = case.check["function"]
    assert CODING.score(case, case.answer)["score"] == 1.0
    tricks = [
        "raise SystemExit",
        "import sys\nsys.exit(0)",
        "import os\nos._exit(0)",
        f"class Yes:\n    def __eq__(self, other):\n        return True\n\ndef {name}(*args):\n    return Yes()",
        f"import builtins\nbuiltins.AssertionError = type('Never', (Exception,), {{}})\ndef {name}(*args):\n    return None",
        f"def {name}(*args):\n    import os\n    os._exit(0)",
        f"print('done 0')\ndef {name}(*args):\n    raise SystemExit",
    ]
    for trick in tricks:
        assert CODING.score(case, say(f"```python\n{trick}\n```"))["score"] == 0.0, trick


def test_the_sandbox_stops_a_runaway_answer():
    tests = [{"args": [], "expected": 1}]
    assert run_tests("def f():\n    return 1", "f", tests)
    assert not run_tests("def f():\n    while True:\n        pass", "f", tests)
    assert not run_tests("def f():\n    return 2", "f", tests)
    assert not run_tests("x = 1", "f", tests)  # no such function


def test_a_table_needs_the_columns_and_every_row():
    table = first(GENUI, "table")
    assert GENUI.score(table, table.answer)["score"] == 1.0
    short = build({**table.check, "rows": table.check["rows"][:-1]})
    swapped = build({**table.check, "columns": table.check["columns"][::-1]})
    assert GENUI.score(table, say(short)) == {"score": 0.0, "valid": 1.0}
    assert GENUI.score(table, say(swapped)) == {"score": 0.0, "valid": 1.0}


def test_a_chart_needs_the_kind_labels_and_values_asked_for():
    chart = first(GENUI, "chart")
    other_kind = "line" if chart.check["chart"] == "bar" else "bar"
    assert GENUI.score(chart, chart.answer)["score"] == 1.0
    assert GENUI.score(chart, say(build({**chart.check, "chart": other_kind})))["score"] == 0.0
    assert GENUI.score(chart, say(build({**chart.check, "values": [v + 1 for v in chart.check["values"]]})))["score"] == 0.0


def test_a_wizard_needs_each_step_with_its_own_inputs():
    wizard = first(GENUI, "wizard")
    assert GENUI.score(wizard, wizard.answer)["score"] == 1.0
    steps = wizard.check["steps"]
    one_page = build({"kind": "form", "what": wizard.check["what"], "title": wizard.check["title"], "shows": wizard.check["shows"]})
    mixed = build({**wizard.check, "steps": [[steps[0][0], steps[1][1]], [steps[1][0], steps[0][1]], *steps[2:]]})
    assert GENUI.score(wizard, say(one_page)) == {"score": 0.0, "valid": 1.0}
    assert GENUI.score(wizard, say(mixed)) == {"score": 0.0, "valid": 1.0}


def test_an_edit_changes_the_surface_shown_and_keeps_the_rest():
    edits = [c for c in GENUI.generate("heldout", 200, 0) if c.check["kind"] == "edit"]
    assert {c.check["edit"] for c in edits} == {"add_field", "add_item", "rename"}
    for case in edits[:12]:
        assert GENUI.score(case, case.answer)["score"] == 1.0
        # the earlier surface made again as a new one, with the change: not an edit (another surface)
        remade = build({**case.check["base"], "shows": case.check["shows"]}) if case.check["edit"] != "rename" else build({**case.check["base"], "button": case.check["new"]})
        assert GENUI.score(case, say(remade))["valid"] == 0.0
        # the earlier surface left as it was: valid, but not what was asked
        unchanged = json.dumps({"version": "v0.9", "updateComponents": {"surfaceId": json.loads(case.messages[1]["content"].splitlines()[0])["createSurface"]["surfaceId"], "components": [{"id": "heading", "component": "Text", "text": "Edited"}]}})
        assert GENUI.score(case, say(unchanged)) == {"score": 0.0, "valid": 1.0}
