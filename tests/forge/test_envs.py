"""Family environments: the observation is the specialist's prompt as the HCP serves it, the
reward is the family's strict scorer on the parsed answer. Run: pytest tests/forge/test_envs.py"""

import json

import pytest

from molt.forge.catalog import ENVS
from molt.forge.envs import FamilyDataset
from molt.hcp.contract import load_hcp
from molt.models.renderer import get_renderer


@pytest.fixture(scope="module")
def renderer(tiny):
    return get_renderer(tiny.tokenizer)


def dataset(renderer, split="train", size=40, family="agent"):
    return FamilyDataset(family, split, size, load_hcp(), family, renderer)


def answer_tokens(renderer, message) -> list[int]:
    """What a policy would sample to give ``message``: body and end token."""
    whole, prompt = renderer.render([{"role": "user", "content": "x"}, message]), renderer.generation_prompt([{"role": "user", "content": "x"}])
    rest = whole[len(prompt) :]
    return rest[: rest.index(renderer.stop_token_ids[0]) + 1]


def test_the_observation_is_the_specialists_prompt_with_the_offered_tools(renderer):
    hcp = load_hcp()
    env = dataset(renderer).problems()[0].make_envs(1)[0]
    text = renderer.tokenizer.decode(env.initial_observation())
    assert hcp.system_prompt("agent") in text and env.case.messages[-1]["content"] in text
    assert all(tool["function"]["name"] in text for tool in env.case.tools)


def test_the_reference_answer_earns_the_reward_and_an_invented_call_does_not(renderer):
    problems = dataset(renderer, size=60).problems()
    by_kind = {p.case.check["kind"]: p for p in problems}
    for problem in by_kind.values():
        env = problem.make_envs(1)[0]
        env.initial_observation()
        assert env.step(answer_tokens(renderer, problem.case.answer)).reward == 1.0
    no_call = by_kind["no_call"].make_envs(1)[0]
    invented = {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function", "function": {"name": "count_down", "arguments": json.dumps({"minutes": 12})}}]}
    assert no_call.step(answer_tokens(renderer, invented)).reward == 0.0
    cut_short = answer_tokens(renderer, by_kind["call"].case.answer)[:-1]  # no end token: ran out of tokens
    assert by_kind["call"].make_envs(1)[0].step(cut_short).reward == 0.0


def test_batches_repeat_in_the_same_order_for_the_same_seed(renderer):
    data = dataset(renderer, size=12)
    first = [[p.case.request for p in batch] for _, batch in zip(range(4), data.batches(4, seed=3))]
    again = [[p.case.request for p in batch] for _, batch in zip(range(4), data.batches(4, seed=3))]
    assert first == again and sorted(sum(first[:3], [])) == sorted(c.request for c in data.cases)


def test_held_out_problems_share_no_function_with_train(renderer):
    functions = lambda split: {t["function"]["name"] for p in dataset(renderer, split, 100).problems() for t in p.case.tools}
    assert functions("train").isdisjoint(functions("heldout"))
    assert set(ENVS) >= {"tool_calls", "unit_tests", "surfaces"}
