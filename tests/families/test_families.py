"""The data families: seeded, their references pass their own scorers, wrong answers score zero.
``.venv/bin/pytest tests/families/test_families.py``"""

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from molt.families import FAMILIES, SPLITS
from molt.families.base import rng_for


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_same_seed_same_cases_and_other_seed_other_cases(name):
    generate = FAMILIES[name].generate
    first, again, other = generate("train", 40, 0), generate("train", 40, 0), generate("train", 40, 1)
    assert [c.messages for c in first] == [c.messages for c in again]
    assert [c.request for c in first] != [c.request for c in other]


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("split", SPLITS)
def test_every_reference_answer_scores_full_marks(name, split):
    family = FAMILIES[name]
    cases = family.generate(split, 60, 3)
    with ThreadPoolExecutor(4) as pool:  # coding runs each case's tests in its own sandboxed process
        scores = list(pool.map(lambda case: family.score(case, case.answer), cases))
    assert all(s["score"] == 1.0 for s in scores), [(c.request, s) for c, s in zip(cases, scores) if s["score"] != 1.0][:3]
    assert family.summarise(scores)["score"] == 1.0


def test_wrong_answers_score_zero():
    agent = FAMILIES["agent"]
    case = next(c for c in agent.generate("heldout", 50, 0) if c.check["kind"] == "call")
    call = case.answer["tool_calls"][0]
    arguments = json.loads(call["function"]["arguments"])
    arguments[next(iter(arguments))] = "something else"
    wrong = {"role": "assistant", "tool_calls": [{**call, "function": {"name": call["function"]["name"], "arguments": json.dumps(arguments)}}]}
    assert agent.score(case, wrong)["score"] == 0.0
    assert agent.score(case, {"role": "assistant", "content": "Sure, done."})["score"] == 0.0

    coding = FAMILIES["coding"]
    case = coding.generate("heldout", 1, 0)[0]
    broken = case.answer["content"].replace("return", "return 1 +", 1)
    assert coding.score(case, {"role": "assistant", "content": broken})["score"] == 0.0
    assert coding.score(case, {"role": "assistant", "content": "```python\ndef f(:\n```"})["score"] == 0.0

    genui = FAMILIES["genui"]
    case = genui.generate("heldout", 1, 0)[0]
    assert genui.score(case, {"role": "assistant", "content": case.answer["content"].replace('"Column"', '"Slider"')})["valid"] == 0.0

    chat = FAMILIES["chat"]
    case = next(c for c in chat.generate("heldout", 40, 0) if c.check["kind"] == "capital")
    assert chat.score(case, {"role": "assistant", "content": "I am not sure."})["score"] == 0.0
    assert chat.score(case, {"role": "assistant", "content": case.answer["content"] + " word" * 50})["score"] == 0.0


def test_agent_covers_every_shape_and_offers_several_functions():
    for split in ("train", "heldout"):
        cases = FAMILIES["agent"].generate(split, 300, 0)
        assert {c.check["kind"] for c in cases} == {"call", "no_call", "result"}
        assert any(len(c.check.get("calls", [])) == 2 for c in cases)  # parallel calls
        assert any(len(c.tools) >= 3 for c in cases)
        for case in cases:
            offered = {t["function"]["name"] for t in case.tools}
            if case.check["kind"] == "no_call":
                assert case.answer.get("content") and not case.answer.get("tool_calls") and case.check["function"] not in offered
            else:
                assert {c["function"]["name"] for m in [*case.messages, case.answer] for c in m.get("tool_calls") or []} <= offered


def test_streams_differ_per_split_and_family():
    assert rng_for("train", 0, "agent").random() != rng_for("heldout", 0, "agent").random()
    assert rng_for("train", 0, "agent").random() != rng_for("train", 0, "chat").random()


def test_agent_can_be_narrowed_to_some_functions():
    names = {"get_weather", "set_timer", "add_todo"}
    for case in FAMILIES["agent"].generate("train", 120, 0, functions=sorted(names)):
        assert {t["function"]["name"] for t in case.tools} <= names


def test_agent_shapes_can_be_reweighed():
    cases = FAMILIES["agent"].generate("train", 40, 0, shapes={"result": 1.0})
    assert {c.check["kind"] for c in cases} == {"result"}
    with pytest.raises(ValueError, match=r"unknown agent case shapes \['answer'\]; known: call, parallel, no_call, result"):
        FAMILIES["agent"].generate("train", 4, 0, shapes={"answer": 1.0})


def test_the_docstring_example_runs():
    chat = FAMILIES["chat"]
    case = chat.generate("heldout", 1, seed=0)[0]
    assert chat.score(case, case.answer)["score"] == 1.0
