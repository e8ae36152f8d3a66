"""The data families: seeded, split by template, and their references pass their own checks."""

import json

import pytest

from molt.datagen import FAMILIES, SPLITS
from molt.datagen.common import rng_for
from molt.evaluate.scoring import score, summarise


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_same_seed_same_cases_and_other_seed_other_cases(family):
    generate = FAMILIES[family]
    first, again, other = generate("train", 40, 0), generate("train", 40, 0), generate("train", 40, 1)
    assert [c.messages for c in first] == [c.messages for c in again]
    assert [c.request for c in first] != [c.request for c in other]


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_held_out_requests_never_repeat_train_requests(family):
    train = {c.request for c in FAMILIES[family]("train", 400, 0)}
    heldout = {c.request for c in FAMILIES[family]("heldout", 200, 0)}
    assert train and heldout and not train & heldout


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("split", SPLITS)
def test_every_reference_answer_scores_full_marks(family, split):
    cases = FAMILIES[family](split, 60, 3)
    scores = [score(case, case.answer) for case in cases]
    assert all(s["score"] == 1.0 for s in scores), [(c.request, s) for c, s in zip(cases, scores) if s["score"] != 1.0][:3]
    assert summarise(family, scores)["score"] == 1.0


def test_wrong_answers_score_zero():
    agent = next(c for c in FAMILIES["agent"]("heldout", 50, 0) if c.check["kind"] == "call")
    call = agent.answer["tool_calls"][0]
    arguments = json.loads(call["function"]["arguments"])
    first = next(iter(arguments))
    arguments[first] = "something else"
    wrong = {"role": "assistant", "tool_calls": [{**call, "function": {"name": call["function"]["name"], "arguments": json.dumps(arguments)}}]}
    assert score(agent, wrong)["score"] == 0.0
    assert score(agent, {"role": "assistant", "content": "Sure, done."})["score"] == 0.0

    coding = FAMILIES["coding"]("heldout", 1, 0)[0]
    broken = coding.answer["content"].replace("return", "return 1 +", 1)
    assert score(coding, {"role": "assistant", "content": broken})["score"] == 0.0
    assert score(coding, {"role": "assistant", "content": "def f(:\n"})["score"] == 0.0

    genui = FAMILIES["genui"]("heldout", 1, 0)[0]
    assert score(genui, {"role": "assistant", "content": genui.answer["content"].replace('"Column"', '"Slider"')})["valid"] == 0.0

    chat = next(c for c in FAMILIES["chat"]("heldout", 40, 0) if c.check["kind"] == "capital")
    assert score(chat, {"role": "assistant", "content": "I am not sure."})["score"] == 0.0
    assert score(chat, {"role": "assistant", "content": chat.answer["content"] + " " + "word " * 50})["score"] == 0.0


def test_agent_covers_every_shape_and_offers_several_functions():
    cases = FAMILIES["agent"]("train", 300, 0)
    kinds = {c.check["kind"] for c in cases}
    assert kinds == {"call", "no_call", "result"}
    assert any(len(c.check.get("calls", [])) == 2 for c in cases)  # parallel calls
    assert any(len(c.tools) >= 3 for c in cases)
    for case in cases:
        offered = {t["function"]["name"] for t in case.tools}
        if case.check["kind"] == "no_call":
            assert case.answer.get("content") and not case.answer.get("tool_calls")
        else:
            assert {c["function"]["name"] for m in [*case.messages, case.answer] for c in m.get("tool_calls") or []} <= offered


def test_streams_differ_per_split_and_family():
    assert rng_for("train", 0, "agent").random() != rng_for("heldout", 0, "agent").random()
    assert rng_for("train", 0, "agent").random() != rng_for("train", 0, "chat").random()


def test_sandbox_stops_a_runaway_answer():
    from molt.evaluate.sandbox import passes

    assert passes("def f():\n    return 1", ["assert f() == 1"])
    assert not passes("def f():\n    while True:\n        pass", ["assert f() == 1"])
    assert not passes("import os\ndef f():\n    return 2", ["assert f() == 1"])


def test_agent_can_be_narrowed_to_some_functions():
    names = {"get_weather", "set_timer", "add_todo"}
    for case in FAMILIES["agent"]("train", 120, 0, functions=sorted(names)):
        assert {t["function"]["name"] for t in case.tools} <= names
