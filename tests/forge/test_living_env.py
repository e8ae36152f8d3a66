"""``living``, the RL environment of the living scenarios: the oracle's messages, sampled as
tokens, earn the benchmark's full reward; a later session sees what the user said before; a
malformed message ends the episode with nothing. Run: pytest tests/forge/test_living_env.py"""

import json

import pytest

from molt.bench.living import OracleAssistant, scenarios
from molt.bench.living.phrases import mentions
from molt.forge.catalog import ENVS
from molt.forge.living import LivingDataset, oracle_transcripts
from molt.harness.memory import stated_facts
from molt.hcp.contract import load_hcp
from molt.models.renderer import get_renderer
from molt.train.data import parse_example


@pytest.fixture(scope="module")
def renderer(tiny):
    return get_renderer(tiny.tokenizer)


def tokens_of(renderer, message: dict) -> list[int]:
    """The tokens of an assistant message, up to and including its end token."""
    prompt = renderer.generation_prompt([{"role": "user", "content": "x"}])
    rest = renderer.render([{"role": "user", "content": "x"}, message])[len(prompt) :]
    return rest[: rest.index(renderer.stop_token_ids[0]) + 1]


def play(env, renderer) -> tuple[float, list[str]]:
    """The oracle's episode; the reward and each observation's text."""
    scenario = env.episode.scenario
    oracle, seen = OracleAssistant(scenario), [renderer.tokenizer.decode(env.initial_observation())]
    while True:
        episode = env.episode
        message = oracle(list(episode.messages), episode.tools, scenario.user, episode.session)
        result = env.step(tokens_of(renderer, {k: v for k, v in message.items() if v is not None}))
        if result.done:
            return result.reward, seen
        seen.append(renderer.tokenizer.decode(result.next_observation))


def test_the_oracle_earns_the_full_reward_and_memory_carries_across_sessions(renderer):
    problems = LivingDataset("train", 42, load_hcp(), "agent", renderer).problems()
    assert len(problems) == 42 and ENVS["living"].label == "agent"
    multi = [p for p in problems if p.scenario.multi_session]
    single = [p for p in problems if not p.scenario.multi_session]
    for problem in [*single[:6], *multi]:
        env = problem.make_envs(1)[0]
        reward, seen = play(env, renderer)
        assert reward == 1.0 and "What you know about this user" not in seen[0], problem.scenario.id
        if problem.scenario.multi_session:  # the note holds the fact the last session needs
            later = [text for text in seen if "Hello, me again" in text or "Hi again" in text]
            slot = problem.scenario.profile[problem.scenario.sessions[-1].recalled[0]]
            needed = [f"- {k}: {v}" for k, v in stated_facts(env.episode.sessions[-2][1]["content"]) if mentions(v, slot.spoken)]
            assert later and needed and all("What you know about this user" in text and needed[0] in text for text in later), problem.scenario.id


def test_held_out_problems_are_the_benchmarks_test_split(renderer):
    train = {p.scenario.template for p in LivingDataset("train", 42, load_hcp(), "agent", renderer).problems()}
    heldout = {p.scenario.template for p in LivingDataset("heldout", 42, load_hcp(), "agent", renderer).problems()}
    assert train and heldout and not train & heldout


def test_a_malformed_message_ends_the_episode_with_nothing(renderer):
    env = LivingDataset("train", 1, load_hcp(), "agent", renderer).problems()[0].make_envs(1)[0]
    env.initial_observation()
    cut = tokens_of(renderer, {"role": "assistant", "content": "I will"})[:-1]  # no end token: cut off
    result = env.step(cut)
    assert result.done and result.reward == 0.0 and result.metrics["malformed"] == 1.0


def test_oracle_transcripts_are_sft_rows_of_every_train_session():
    rows = oracle_transcripts("train", [0], load_hcp())
    assert len(rows) == sum(len(s.sessions) for s in scenarios("train", 0))
    for number, row in enumerate(rows, 1):
        parse_example(json.dumps(row), number, "oracle")  # what `molt train sft --data` reads, or a clear error
        assert row["messages"][-1]["role"] == "assistant" and row["tools"]
    later = [row for row in rows if len([m for m in row["messages"] if m["role"] == "system"]) == 3]
    assert len(later) == sum(len(s.sessions) - 1 for s in scenarios("train", 0))  # every later session carries the note
    assert all("What you know about this user" in row["messages"][1]["content"] for row in later)


def test_molt_train_demos_writes_the_oracle_rows_and_never_the_test_split(tmp_path):
    from typer.testing import CliRunner

    from molt.cli import app
    from molt.hcp.contract import default_hcp_path

    out = tmp_path / "demos.jsonl"
    result = CliRunner().invoke(app, ["train", "demos", "--out", str(out), "--seeds", "0,1", "--hcp", str(default_hcp_path())])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows == oracle_transcripts("train", [0, 1], load_hcp())
    assert "--split" not in CliRunner().invoke(app, ["train", "demos", "--help"]).output  # the test split cannot be asked for
    for bad in (["--env", "surfaces"], ["--seeds", "a,b"]):
        result = CliRunner().invoke(app, ["train", "demos", "--out", str(tmp_path / "x.jsonl"), *bad])
        assert result.exit_code == 2 and "error:" in result.output and not (tmp_path / "x.jsonl").exists()
