"""``business``: reference episodes of both action modes earn the reward through the harness (code
runs in a sandboxed session of the episode's own); wrong answers and unoffered calls earn nothing.
Run: pytest tests/forge/test_business_env.py"""

import pytest

from molt.families.business import episode
from molt.forge.business import BusinessDataset
from molt.hcp.contract import load_hcp
from molt.models.renderer import get_renderer


@pytest.fixture(scope="module")
def renderer(tiny):
    return get_renderer(tiny.tokenizer)


@pytest.fixture(scope="module")
def problems(renderer):
    dataset = BusinessDataset("heldout", 4, load_hcp(), "agent", renderer)
    yield dataset.problems()
    dataset.harness.close()


def tokens(renderer, message: dict) -> list[int]:
    """An assistant turn as the model would sample it, up to and including its end token."""
    prompt = renderer.generation_prompt([{"role": "user", "content": "x"}])
    rest = renderer.render([{"role": "user", "content": "x"}, message])[len(prompt) :]
    return rest[: rest.index(renderer.stop_token_ids[0]) + 1]


def play(renderer, problem, replies: list[dict]):
    env = problem.make_envs(1)[0]
    env.initial_observation()
    for reply in replies:
        result = env.step(tokens(renderer, reply))
        if result.done:
            return env, result
    raise AssertionError("the episode did not end")


def test_reference_episodes_of_both_modes_earn_the_reward(renderer, problems):
    for problem in problems:
        task, mode, world = problem.args[:3]
        env, result = play(renderer, problem, [m for m in episode(task, mode, world) if m["role"] == "assistant"])
        assert result.reward == 1.0, (task.kind, mode, env.messages[-1])
        if mode == "repl":
            assert env.messages[-1]["content"] == task.output  # the code ran in the sandbox against the world
    assert {p.args[1] for p in problems} == {"function_calling", "repl"}


def test_a_wrong_answer_or_an_unoffered_call_earns_nothing(renderer, problems):
    task, mode, world = problems[0].args[:3]
    _, wrong = play(renderer, problems[0], [{"role": "assistant", "content": "No idea, sorry."}])
    assert wrong.reward == 0.0
    stray = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "find_customer", "arguments": "{}"}}]}
    _, refused = play(renderer, problems[0], [stray])
    assert refused.reward == 0.0 and refused.done
