"""``order_refund``, the multi-turn environment: look the id up, read it from the tool result,
refund exactly that order. Run: pytest tests/forge/test_orders.py"""

import json

import pytest

from molt.forge.orders import ITEMS, OrderDataset
from molt.forge.trajectory import Trajectory, Transition, trajectory_datums
from molt.hcp.contract import load_hcp
from molt.models.renderer import get_renderer


@pytest.fixture(scope="module")
def renderer(tiny):
    return get_renderer(tiny.tokenizer)


def env_of(renderer, split="train"):
    problem = OrderDataset(split, 4, load_hcp(), "agent", renderer).problems()[0]
    return problem.make_envs(1)[0]


def call(renderer, name: str, **arguments) -> list[int]:
    """The tokens of an assistant turn making one call, up to and including its end token."""
    message = {"role": "assistant", "content": None, "tool_calls": [{"id": "c0", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}
    prompt = renderer.generation_prompt([{"role": "user", "content": "x"}])
    rest = renderer.render([{"role": "user", "content": "x"}, message])[len(prompt) :]
    return rest[: rest.index(renderer.stop_token_ids[0]) + 1]


def test_look_up_then_refund_earns_the_reward_and_is_one_datum(renderer):
    env = env_of(renderer)
    first = env.initial_observation()
    lookup = call(renderer, "find_order", item=env.item)
    result = env.step(lookup)
    assert not result.done and result.reward == 0.0
    assert env.order_id in renderer.tokenizer.decode(result.next_observation)  # the tool's answer is observed
    refund = call(renderer, "refund_order", order_id=env.order_id)
    final = env.step(refund)
    assert final.done and final.reward == 1.0 and final.metrics["looked_up_first"] == 1.0
    episode = Trajectory([Transition(first, lookup, [-0.1] * len(lookup)), Transition(result.next_observation, refund, [-0.1] * len(refund))], final_reward=final.reward)
    assert len(trajectory_datums(episode, 1.0)) == 1  # the second observation extends the first


def test_a_guessed_id_an_answer_without_refund_and_running_out_of_turns_earn_nothing(renderer):
    env = env_of(renderer)
    assert env.step(call(renderer, "refund_order", order_id="Z-0000")).reward == 0.0
    env = env_of(renderer)
    plain = renderer.render([{"role": "user", "content": "x"}, {"role": "assistant", "content": "Done, refunded!"}])
    prompt = renderer.generation_prompt([{"role": "user", "content": "x"}])
    answer = plain[len(prompt) : plain.index(renderer.stop_token_ids[0], len(prompt)) + 1]
    result = env.step(answer)
    assert result.done and result.reward == 0.0
    env = env_of(renderer)
    results = [env.step(call(renderer, "find_order", item="nothing")) for _ in range(env.max_turns)]
    assert [r.done for r in results] == [False] * (env.max_turns - 1) + [True] and results[-1].reward == 0.0


def test_held_out_items_never_occur_in_train(renderer):
    assert set(ITEMS["train"]).isdisjoint(ITEMS["heldout"])
    train = OrderDataset("train", 50, load_hcp(), "agent", renderer)
    assert all(problem.args[1] in ITEMS["train"] for problem in train.problems())
    assert all(problem.args[1] in ITEMS["heldout"] for problem in OrderDataset("heldout", 20, load_hcp(), "agent", renderer).problems())
