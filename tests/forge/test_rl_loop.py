"""The RL loop end to end on a tiny model: sampling through a real engine server (each step's
revision hot-loaded), training through MinT, metrics, checkpoints, a resumed run that sees the
same data as an uninterrupted one, a reward that rises, and the same loop against a remote MinT
through a faulty network. Run: pytest tests/forge/test_rl_loop.py"""

import json
import random
from collections.abc import Iterator

import pytest

from faulty_network import Fault, FaultyRelay

from molt.engine.config import EngineConfig
from molt.engine.server import create_app
from molt.forge.envs import Env, EnvGroupBuilder, RLDataset, StepResult
from molt.forge.loop import RLConfig, Run, run_rl
from molt.forge.sampler import EngineSampler
from molt.http_server import ServerThread
from molt.mint import ServiceClient
from molt.mint.types import AdamParams, Datum, ModelInput
from molt.models import load_model
from molt_processes import free_port, start_mint


WORDS = list(range(1000, 1020))
"""The policy is first taught (SFT) to write these tokens, at random; RL then favours the good ones."""
GOOD = set(WORDS[::2])


class GoodWords(Env):
    """Reward: the share of an 8-token answer in ``GOOD`` (~0.5 for the SFT policy)."""

    stop_token_ids: list[int] = []

    def __init__(self, prompt: list[int]):
        self.prompt = prompt

    def initial_observation(self) -> list[int]:
        return self.prompt

    def step(self, action: list[int]) -> StepResult:
        return StepResult(sum(t in GOOD for t in action) / len(action), True)


class EvenTokens(GoodWords):
    """Reward: the share of even token ids (varies within a group even for an untrained model)."""

    def step(self, action: list[int]) -> StepResult:
        return StepResult(sum(t % 2 == 0 for t in action) / len(action), True)


class Prompt(EnvGroupBuilder):
    def __init__(self, prompt: list[int], env: type[Env] = GoodWords):
        self.prompt, self.env = prompt, env

    @property
    def key(self) -> str:
        return str(self.prompt)

    def make_envs(self, n: int) -> list[Env]:
        return [self.env(self.prompt) for _ in range(n)]


class Prompts(RLDataset):
    def __init__(self, count: int, seed: int, env: type[Env] = GoodWords, length: int = 6):
        rng = random.Random(seed)
        self.problems = [Prompt([rng.randrange(100, 5000) for _ in range(length)], env) for _ in range(count)]

    def batches(self, batch_size: int, seed: int = 0) -> Iterator[list[EnvGroupBuilder]]:
        order = list(self.problems)
        random.Random(seed).shuffle(order)
        while True:
            for start in range(0, len(order) - batch_size + 1, batch_size):
                yield order[start : start + batch_size]


@pytest.fixture(scope="module")
def engine_url(tiny):
    with ServerThread(create_app(EngineConfig(model="tiny", max_model_len=128, max_prefill_chunk=128), load_model("tiny"))) as url:
        yield url + "/v1"


def taught_words(steps: int = 30, service: ServiceClient | None = None):
    """A training client (of ``service``, default in-process) whose policy writes WORDS (any of
    them, about evenly) after any prompt."""
    training = (service or ServiceClient()).create_lora_training_client("tiny", rank=8, seed=0)
    rng = random.Random(0)
    for _ in range(steps):
        data = []
        for _ in range(8):
            tokens = [rng.randrange(100, 5000) for _ in range(6)] + [rng.choice(WORDS) for _ in range(8)]
            data.append(Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [0.0] * 5 + [1.0] * 8}))
        training.forward_backward(data, "cross_entropy").result()
        training.optim_step(AdamParams(learning_rate=2e-2)).result()
    return training


def make_run(engine_url, folder, steps: int, lr: float = 1e-2, tokens_per_call: int = 2048, oversample: int = 1) -> Run:
    config = RLConfig(adapter="words", steps=steps, batch=2, oversample=oversample, group_size=8, lr=lr, max_tokens=8, eval_every=2, checkpoint_every=2, seed=1, tokens_per_call=tokens_per_call)
    return Run(config, Prompts(8, seed=0), Prompts(4, seed=9).problems, taught_words(), EngineSampler(engine_url), folder)


def test_the_loop_trains_logs_and_raises_the_reward(engine_url, tmp_path):
    """The 16 datums of a step (13 tokens each) go to MinT in calls of 3: gradients add up."""
    summary = run_rl(make_run(engine_url, tmp_path / "run", steps=10, tokens_per_call=40))
    history = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in history] == list(range(10))
    assert all(m["groups"] == 2 and m["sampled_tokens"] == 2 * 8 * 8 for m in history)
    assert sum(m["groups_kept"] for m in history) > 0 and all("loss" in m for m in history if m["groups_kept"])
    assert (tmp_path / "run" / "curves.png").stat().st_size > 0
    first, last = sum(m["reward_mean"] for m in history[:3]) / 3, sum(m["reward_mean"] for m in history[-3:]) / 3
    assert last > first + 0.15, (first, last)  # the policy learned to write even tokens
    assert summary["heldout_after"] > summary["heldout_before"]


def test_oversampling_trains_at_most_a_batch_of_informative_groups(engine_url, tmp_path):
    """Dynamic sampling: 4 problems sampled a step (2 × 2), the first 2 groups whose rewards
    differ trained; no step trains more groups than the batch, and all 8 problems are seen."""
    run_rl(make_run(engine_url, tmp_path / "run", steps=2, oversample=2))
    history = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["groups"] for m in history] == [4, 4] and all(m["groups_kept"] <= 2 for m in history)
    assert len({p for m in history for p in m["problems"]}) == 8


def test_a_resumed_run_sees_the_same_batches(engine_url, tmp_path):
    """Stopped after 2 steps (a checkpoint), resumed to 4: the same problems at every step as
    one run of 4 steps."""
    problems = lambda folder: [m["problems"] for m in map(json.loads, (folder / "metrics.jsonl").read_text().splitlines())]
    whole = tmp_path / "whole"
    run_rl(make_run(engine_url, whole, steps=4))
    parts = tmp_path / "parts"
    run_rl(make_run(engine_url, parts, steps=2))
    progress = json.loads((parts / "progress.json").read_text())
    assert progress["step"] == 2
    run_rl(make_run(engine_url, parts, steps=4), resume=True)
    assert problems(parts) == problems(whole)


@pytest.mark.parametrize("base", ["tiny:qwen3_moe", "tiny:qwen3_dsa"])
def test_routing_replay_keeps_the_learner_on_the_sampler(tmp_path, base):
    """A sparse-MoE and a sparse-attention base with R3: every datum carries the engine's routing
    (through HTTP), all of it is replayed, and the learner's logprobs of the sampled tokens are
    the sampler's (KL ~ 0)."""
    with ServerThread(create_app(EngineConfig(model=base, dtype="float32", max_model_len=128, max_prefill_chunk=128), load_model(base))) as url:
        config = RLConfig(adapter="words", steps=2, batch=2, group_size=8, lr=1e-2, max_tokens=8, eval_every=2, checkpoint_every=2, seed=1, routing_replay=True)
        training = ServiceClient().create_lora_training_client(base, rank=8, seed=0)
        run_rl(Run(config, Prompts(8, seed=0, env=EvenTokens), Prompts(2, seed=9).problems, training, EngineSampler(url + "/v1", routing=True), tmp_path))
    history = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    trained = [m for m in history if m["groups_kept"]]
    assert trained and all(m["routing_unreplayed:mean"] == 0 for m in trained)
    assert abs(trained[0]["sampler_learner_kl"]) < 1e-4  # the first step samples the policy it trains


def test_groups_sharing_a_long_prompt_train_through_longstraw(tmp_path):
    """A 600-token prompt per problem: each kept group goes to MinT whole and its prompt is
    computed once (LongStraw, ``molt.mint.longstraw``), without any setting in the loop."""
    engine = EngineConfig(model="tiny", max_model_len=1024, max_prefill_chunk=256)
    with ServerThread(create_app(engine, load_model("tiny"))) as url:
        config = RLConfig(adapter="long", steps=2, batch=2, group_size=4, lr=1e-2, max_tokens=8, eval_every=2, checkpoint_every=2, seed=1)
        training = ServiceClient().create_lora_training_client("tiny", rank=8, seed=0)
        problems, heldout = Prompts(4, 0, EvenTokens, length=600), Prompts(2, 9, EvenTokens, length=600).problems
        run_rl(Run(config, problems, heldout, training, EngineSampler(url + "/v1"), tmp_path / "run"))
    history = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sum(m["groups_kept"] for m in history) > 0
    assert all(m["longstraw_groups"] == m["groups_kept"] for m in history if m["groups_kept"])


TAUGHT = 30  # steps of taught_words before RL
FAULTS = [
    Fault("/forward_backward", 3, "duplicate"),  # while teaching
    Fault("/optim_step", TAUGHT + 1, "reset"),  # the first RL step
    Fault("/forward_backward", TAUGHT + 2, "duplicate"),
    Fault("/save_weights_for_sampler", 2, "drop"),
    Fault("/retrieve_future", 40, "reset"),
]


def test_the_rl_loop_trains_exactly_once_through_a_faulty_network(engine_url, tmp_path):
    """Against a remote MinT (``molt mint serve``, another process, the Tinker protocol) through a
    faulty network: a forward_backward delivered twice, an optim_step whose reply is lost, a
    dropped save, a reset poll. One optimizer step per optim_step call (the server's step
    counter), and the reward still rises."""
    port = free_port()
    server = start_mint(port)
    try:
        with FaultyRelay(f"http://127.0.0.1:{port}", FAULTS) as relay:
            training = taught_words(TAUGHT, ServiceClient(base_url=relay.url))
            config = RLConfig(adapter="words", steps=6, batch=2, group_size=8, lr=1e-2, max_tokens=8, eval_every=3, checkpoint_every=3, seed=1)
            summary = run_rl(Run(config, Prompts(8, seed=0), Prompts(4, seed=9).problems, training, EngineSampler(engine_url), tmp_path / "run"))
            after = training.optim_step(AdamParams(learning_rate=1e-9)).result()["step"]
    finally:
        server.terminate()
        server.wait(timeout=60)
    history = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert sorted(map(repr, relay.fired)) == sorted(map(repr, FAULTS))  # every fault happened
    trained = sum(1 for m in history if m["groups_kept"])
    assert trained > 0 and after == TAUGHT + trained + 1  # one step per optim_step call, none twice
    assert summary["heldout_after"] >= summary["heldout_before"]
