"""``molt rl``: GRPO-style RL for one specialist, training through MinT and sampling through an
OpenAI-compatible engine.

One step: take ``batch`` problems (× ``oversample``); for each, sample a group of ``group_size``
answers from the revision the engine serves now (concurrently across problems); reward them in
their envs; advantage = reward − group mean (÷ std with ``normalize``); drop groups whose rewards
are all equal (and keep at most ``batch``); turn trajectories into Datums (``trajectory_datums``);
``forward_backward`` with the RL loss, ``optim_step``; save the new revision and hot-load it under
the adapter's name.

Everything a run writes goes to its folder: ``metrics.jsonl`` (one line per step),
``progress.json`` (the last checkpoint, for ``--resume``), ``curves.png`` and ``summary.json``.
The data order is a function of the seed, so a resumed run sees exactly the batches an
uninterrupted one would.
"""

import json
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path

from molt.forge.advantages import group_advantages, informative_groups
from molt.forge.envs import EnvGroupBuilder, RLDataset
from molt.forge.sampler import EngineSampler
from molt.forge.trajectory import Trajectory, Transition, trajectory_datums
from molt.home import write_atomic
from molt.mint.checkpoints import resolve
from molt.mint import longstraw
from molt.mint.backend import loss_inputs
from molt.mint.clients import TrainingClient
from molt.mint.losses import loss_start, resolve_loss
from molt.mint.types import AdamParams, Datum


@dataclass(frozen=True)
class RLConfig:
    adapter: str
    """The name the engine serves the policy under (each step hot-loads a new revision)."""
    steps: int = 20
    batch: int = 4
    """Problems per step (groups trained per step, with ``oversample``)."""
    oversample: int = 1
    """Sample ``batch × oversample`` problems a step and train the first ``batch`` groups whose
    rewards differ (DAPO's dynamic sampling): when most groups are solved or failed alike, more of
    each step's gradient survives."""
    group_size: int = 4
    lr: float = 1e-4
    loss: str = "importance_sampling"
    loss_config: dict[str, float] = field(default_factory=dict)
    """e.g. ``tis_cap``, ``icepop_beta`` (see ``molt.mint.losses``)."""
    normalize: bool = False
    temperature: float = 1.0
    max_tokens: int = 256
    eval_every: int = 5
    checkpoint_every: int = 5
    seed: int = 0
    routing_replay: bool = False
    """Sparse-MoE / sparse-attention bases: the engine records each token's routing, the learner
    replays it (R3, ``molt.mint.routing``)."""
    tokens_per_call: int = 2048
    """Datums per ``forward_backward`` call are cut to about this many tokens (gradients add up
    across calls until ``optim_step``), which bounds the learner's activation memory."""
    eval_concurrency: int = 1
    """Held-out problems answered at a time. A greedy answer depends on what else shares the
    engine's batch (float sums change with its shape and near-tied tokens flip: 8 at a time, one
    tool_calls revision scored 0.23 and 0.35 on the same 100 problems); one at a time, the same
    revision always gets the same figure."""


@dataclass
class Run:
    """What one ``run_rl`` call works with: its datasets, its two seams, and its folder."""

    config: RLConfig
    train: RLDataset
    heldout: list[EnvGroupBuilder]
    training: TrainingClient
    sampler: EngineSampler
    folder: Path
    on_step: Callable[[dict], None] = lambda metrics: None


def rollout(builder: EnvGroupBuilder, run: Run, n: int, temperature: float, seed: int | None) -> list[Trajectory]:
    """``n`` episodes of one problem; the first action of the group is one ``n``-sample request."""
    envs = builder.make_envs(n)
    observations = [env.initial_observation() for env in envs]
    config = run.config
    samples = run.sampler.sample(config.adapter, observations[0], n, config.max_tokens, temperature, envs[0].stop_token_ids, seed)
    trajectories = []
    for env, observation, sample in zip(envs, observations, samples):
        transitions, reward, metrics = [], 0.0, {}
        while True:
            transitions.append(Transition(observation, sample.tokens, sample.logprobs, routing=sample.routing))
            result = env.step(sample.tokens)
            reward, metrics = reward + result.reward, result.metrics
            if result.done or result.next_observation is None:
                break
            observation = result.next_observation
            [sample] = run.sampler.sample(config.adapter, observation, 1, config.max_tokens, temperature, env.stop_token_ids, seed)
        trajectories.append(Trajectory(transitions, final_reward=reward, metrics=metrics))
    return trajectories


def greedy_answers(run: Run, problems: list[EnvGroupBuilder]) -> list[Trajectory]:
    """One greedy episode per problem, ``eval_concurrency`` at a time."""
    with ThreadPoolExecutor(run.config.eval_concurrency) as pool:
        return [group[0] for group in pool.map(lambda b: rollout(b, run, 1, 0.0, None), problems)]


def evaluate(run: Run, problems: list[EnvGroupBuilder]) -> float:
    """Mean reward of greedy answers (one per problem)."""
    return statistics.fmean(t.reward for t in greedy_answers(run, problems))


def publish(run: Run, step: int) -> Path:
    """Save the policy as a revision and make the engine serve it under the adapter's name."""
    path = resolve(run.training.save_weights_for_sampler(f"step-{step:05d}").result())
    run.sampler.load_adapter(run.config.adapter, path)
    return path


def train_step(run: Run, step: int, batch: list[EnvGroupBuilder]) -> dict:
    config = run.config
    started = time.perf_counter()
    with ThreadPoolExecutor(len(batch)) as pool:
        groups = list(pool.map(lambda b: rollout(b, run, config.group_size, config.temperature, config.seed * 100_003 + step), batch))
    sampled = time.perf_counter()
    rewards = [t.reward for g in groups for t in g]
    kept = informative_groups(groups)[: config.batch]
    datums = [d for g in kept for t, a in zip(g, group_advantages([t.reward for t in g], config.normalize)) for d in trajectory_datums(t, a)]
    metrics = {
        "step": step, "reward_mean": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
        "groups_kept": len(kept), "groups": len(groups), "problems": [b.key for b in batch],
        "sampled_tokens": sum(len(tr.action) for g in groups for t in g for tr in t.transitions),
    }  # fmt: skip
    if datums:
        chunks = _calls(datums, config.tokens_per_call, resolve_loss(config.loss, config.loss_config)[2])
        datums = [d for chunk in chunks for d in chunk]
        outputs = [run.training.forward_backward(chunk, config.loss, config.loss_config).result() for chunk in chunks]
        run.training.optim_step(AdamParams(learning_rate=config.lr)).result()
        metrics["loss"] = sum(o.metrics["loss:sum"] for o in outputs)
        metrics["longstraw_groups"] = sum(o.metrics.get("longstraw_groups:sum", 0.0) for o in outputs)  # groups whose prompt was computed once
        for key in {k for o in outputs for k in o.metrics if k.endswith(":mean")}:  # per-call shares, weighted by the call's datums
            metrics[key] = sum(o.metrics.get(key, 0.0) * len(c) for o, c in zip(outputs, chunks)) / len(datums)
        metrics["sampler_learner_kl"] = _kl(datums, [out for o in outputs for out in o.loss_fn_outputs])
        metrics["trained_tokens"] = sum(d.model_input.length for d in datums)
    trained = time.perf_counter()
    publish(run, step + 1)
    metrics |= {"sample_s": sampled - started, "train_s": trained - sampled, "publish_s": time.perf_counter() - trained}
    metrics["sampling_tok_s"] = metrics["sampled_tokens"] / max(metrics["sample_s"], 1e-9)
    return metrics


def _calls(datums: list[Datum], tokens: int, loss_config: dict) -> list[list[Datum]]:
    """The datums cut into ``forward_backward`` calls of about ``tokens`` tokens with a graph. A
    group sharing a long prompt (``molt.mint.longstraw``) stays in one call, so the learner computes
    its prompt once, and counts as its prompt plus its longest response, what LongStraw holds at once;
    a unit over the budget goes alone."""
    sequences = [d.model_input.to_ints() for d in datums]
    starts = [loss_start(loss_inputs(d), loss_config) for d in datums]
    shared, plain = longstraw.plan(sequences, starts, longstraw.LongStraw())
    units = [(g.members, g.length + max(len(sequences[m]) - g.length for m in g.members)) for g in shared]
    units = sorted(units + [([i], len(sequences[i])) for i in plain])
    calls: list[list[Datum]] = []
    size = tokens
    for members, cost in units:
        if size + cost > tokens:
            calls.append([])
            size = 0
        calls[-1] += [datums[m] for m in members]
        size += cost
    return calls


def _kl(datums, outputs) -> float:
    """Mean of log q − log p over the action tokens: how far the learner is from the sampler."""
    gaps = []
    for datum, out in zip(datums, outputs):
        acting = [a != 0 for a in datum.loss_fn_inputs["advantages"].tolist()]
        q, p = datum.loss_fn_inputs["logprobs"].tolist(), out["logprobs"].tolist()
        gaps += [qi - pi for qi, pi, act in zip(q, p, acting) if act]
    return statistics.fmean(gaps) if gaps else 0.0


def run_rl(run: Run, resume: bool = False) -> dict:
    """Train for ``config.steps`` steps (continuing from the last checkpoint with ``resume``);
    returns the summary, also written to ``summary.json``."""
    config, folder = run.config, run.folder
    folder.mkdir(parents=True, exist_ok=True)
    progress_file, log_file = folder / "progress.json", folder / "metrics.jsonl"
    start = 0
    if resume and progress_file.is_file():
        progress = json.loads(progress_file.read_text())
        run.training.load_state_with_optimizer(progress["state"]).result()
        start = progress["step"]
        kept = [line for line in log_file.read_text().splitlines() if json.loads(line)["step"] < start] if log_file.is_file() else []
        write_atomic(log_file, "".join(f"{line}\n" for line in kept))  # steps after the checkpoint run again
    else:
        write_atomic(folder / "config.json", json.dumps(asdict(config), indent=1))
        write_atomic(log_file, "")
    publish(run, start)
    before = evaluate(run, run.heldout) if start == 0 else None
    batches = islice(run.train.batches(config.batch * config.oversample, config.seed), start, config.steps)
    for step, batch in enumerate(batches, start):
        metrics = train_step(run, step, batch)
        if (step + 1) % config.eval_every == 0 or step + 1 == config.steps:
            metrics["heldout_reward"] = evaluate(run, run.heldout)
        with log_file.open("a") as log:
            log.write(json.dumps(metrics) + "\n")
        if (step + 1) % config.checkpoint_every == 0 or step + 1 == config.steps:
            state = run.training.save_state(f"step-{step + 1:05d}").result()
            write_atomic(progress_file, json.dumps({"step": step + 1, "state": state}))
        run.on_step(metrics)
    history = [json.loads(line) for line in log_file.read_text().splitlines()]
    summary = {"steps": len(history), "heldout_before": before, "heldout_after": next((m["heldout_reward"] for m in reversed(history) if "heldout_reward" in m), None)}
    summary["train_reward_first"], summary["train_reward_last"] = (history[0]["reward_mean"], history[-1]["reward_mean"]) if history else (None, None)
    write_atomic(folder / "summary.json", json.dumps(summary, indent=1))
    plot_curves(history, folder / "curves.png", before)
    return summary


def plot_curves(history: list[dict], path: Path, heldout_before: float | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([m["step"] + 1 for m in history], [m["reward_mean"] for m in history], label="train reward (sampled)")
    evals = [(0, heldout_before)] if heldout_before is not None else []
    evals += [(m["step"] + 1, m["heldout_reward"]) for m in history if "heldout_reward" in m]
    if evals:
        ax.plot(*zip(*evals), marker="o", label="held-out reward (greedy)")
    ax.set_xlabel("step")
    ax.set_ylabel("reward")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
