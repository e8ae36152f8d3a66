"""Each scorer rewards only what it claims to measure: ``.venv/bin/pytest tests/families/test_scoring.py``.

Every test here pins a loophole of the scorers molt had before (each answer below scored 1.0
there) and checks the strict scorer gives it 0, while the reference still gets 1.
"""

from molt.families import FAMILIES
from molt.families.genui import build
from molt.families.sandbox import run_tests

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
    card = build("card", checklist.check["what"], checklist.check["shows"], checklist.check["what"])
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
