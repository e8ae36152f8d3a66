"""``molt bench rl``: one GRPO workload run by molt (``molt rl``'s step: the engine samples, MinT
trains, the revision is hot-loaded) and by TRL ``GRPOTrainer`` + PEFT, each in its own process.

The same workload on both sides:

- **Problems:** the environment's first ``(warmup_steps + steps) × batch`` training problems, in
  order, rendered by molt under the shipped HCP's prompt for the environment's specialist. TRL
  gets each prompt as text (molt's rendering, decoded) and the same reward: the environment's own
  scorer on the completion's token ids. Single-turn environments only (TRL's trainer has no
  multi-turn environment loop of this kind).
- **Group and step:** ``batch`` problems × ``group_size`` completions per optimizer step, sampled
  at one temperature with up to the environment's ``max_tokens``; advantage = reward − group mean
  (TRL: ``scale_rewards="none"``); no KL term (TRL: ``beta=0``, so no reference model); one
  optimizer step per generation (TRL: ``num_iterations=1``).
- **Model, LoRA and optimizer:** the same base in the same dtype; both policies start from the
  same revision (by default the production specialist the environment trains, whose answers
  earn varied rewards; its rank, alpha and targets) or fresh (rank r, alpha = r, every attention
  and MLP projection); no dropout; AdamW with molt's defaults (betas 0.9/0.95,
  eps 1e-12, no clipping) and one constant learning rate.

What differs is each side's implementation and loss normalisation, printed beside the figures:
molt samples through its continuous-batching engine and drops groups whose rewards are all equal
(they carry no gradient), trains packed rows, and sums its importance-sampling loss over tokens;
TRL samples with ``transformers`` (``--trl-generation``: ``generate`` on a padded batch, or
continuous batching; its vLLM path needs a GPU) stopping at the same end-of-turn tokens, trains
padded rows including zero-advantage groups, and normalises its default ``dapo`` loss by tokens.

Clocks: the whole optimizer step, wall time (molt: rollout, reward, train, export + hot-load;
TRL: ``on_step_begin`` → ``on_step_end``, generation included); rollout time (molt: the sampling
phase, rewards included; TRL: its ``_generate_single_turn``, timed by a subclass that changes
nothing else); training time = step − rollout (so molt's includes the export and hot-load of the
revision, TRL's the rewards). Training tokens: molt's trained datums (prompt + completion − 1,
kept groups only); TRL's ``num_input_tokens_seen`` (prompt + completion, every group). The first
``warmup_steps`` are run and not timed. Peak memory is each process's max RSS. Each side reports
the problems its steps sampled, and the bench refuses to print figures unless they match.
"""

import json
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console

from molt.bench.report import print_rows
from molt.bench.train import TARGETS, peak_mb

SIDES = {"molt": "molt (engine + MinT)", "trl": "TRL GRPOTrainer + PEFT"}


@dataclass(frozen=True)
class RLBenchConfig:
    model: str = "embedded"
    env: str = "tool_calls"
    steps: int = 3
    """Timed optimizer steps, after the warm-up ones."""
    warmup_steps: int = 1
    batch: int = 4
    """Problems per step."""
    group_size: int = 4
    rank: int = 16
    learning_rate: float = 1e-4
    temperature: float = 1.0
    dtype: str = "auto"
    """auto (bf16 where the CPU computes it natively), float32 or bfloat16, for both sides."""
    seed: int = 0
    trl_generation: str = "generate"
    """How TRL samples: ``generate`` (padded batch) or ``continuous_batching`` (transformers' paged
    ``generate_batch``, TRL's ``use_transformers_continuous_batching``)."""
    start: str | None = None
    """The molt:// revision both policies start from (its rank and targets); None: a fresh LoRA."""


TRL_GENERATION = {"generate": "transformers generate (padded batch)", "continuous_batching": "transformers generate_batch (continuous batching)"}


@dataclass(frozen=True)
class SideSettings:
    dtype: str
    rank: int
    alpha: int
    targets: tuple[str, ...]
    problems_per_step: int
    group_size: int
    max_tokens: int
    temperature: float
    learning_rate: float
    start: str = "fresh"
    adam_betas: tuple[float, float] = (0.9, 0.95)
    adam_eps: float = 1e-12
    grad_clip_norm: float = 0.0
    advantage: str = "reward - group mean"
    kl_beta: float = 0.0
    loss: str = ""
    sampler: str = ""
    constant_groups: str = ""


def side_settings(config: RLBenchConfig) -> dict[str, SideSettings]:
    from molt.forge.catalog import ENVS
    from molt.lora.format import read_adapter
    from molt.mint.checkpoints import resolve
    from molt.mint.service import resolve_dtype

    rank, alpha, targets = config.rank, config.rank, TARGETS
    if config.start is not None:
        adapter = read_adapter(resolve(config.start))
        rank, alpha, targets = adapter.r, int(adapter.lora_alpha), tuple(sorted({name.rsplit(".", 1)[-1] for name in adapter.weights}))
    common = SideSettings(
        dtype=str(resolve_dtype(config.dtype)).removeprefix("torch."), rank=rank, alpha=alpha, targets=targets, start=config.start or "fresh",
        problems_per_step=config.batch, group_size=config.group_size, max_tokens=ENVS[config.env].max_tokens,
        temperature=config.temperature, learning_rate=config.learning_rate,
    )  # fmt: skip
    return {
        "molt": replace(common, loss="importance_sampling, summed over tokens", sampler="molt engine (continuous batching)", constant_groups="dropped"),
        "trl": replace(common, loss="dapo (TRL's default), normalised by tokens", sampler=TRL_GENERATION[config.trl_generation], constant_groups="trained (zero advantage)"),
    }


def workload(config: RLBenchConfig) -> list:
    """The problems both sides train on, in order (a pure function of the config)."""
    from molt.forge.catalog import ENVS
    from molt.hcp import load_hcp
    from molt.models import load_tokenizer
    from molt.models.renderer import get_renderer

    if config.trl_generation not in TRL_GENERATION:
        raise ValueError(f"unknown TRL generation {config.trl_generation!r}; one of: {', '.join(TRL_GENERATION)}")
    if config.env not in ENVS:
        raise ValueError(f"unknown environment {config.env!r}; molt has: {', '.join(ENVS)}")
    if config.env == "order_refund":
        raise ValueError("molt bench rl runs single-turn environments (tool_calls, unit_tests, surfaces): TRL's GRPOTrainer has no multi-turn loop like order_refund's")
    spec = ENVS[config.env]
    count = (config.warmup_steps + config.steps) * config.batch
    problems = spec.dataset("train", count, load_hcp(None), spec.label, get_renderer(load_tokenizer(config.model)), config.seed).problems()
    if len(problems) < count:
        raise ValueError(f"{config.env} has {len(problems)} training problems; the bench needs {count}")
    return problems[:count]


def _reward(problem, action: list[int]) -> float:
    env = problem.make_envs(1)[0]
    env.initial_observation()
    return env.step(action).reward


def run_molt(config: RLBenchConfig, s: SideSettings) -> dict:
    from molt.engine.config import EngineConfig
    from molt.engine.server import create_app
    from molt.forge.envs import RLDataset
    from molt.forge.loop import RLConfig, Run, publish, train_step
    from molt.forge.sampler import EngineSampler
    from molt.http_server import ServerThread
    from molt.mint import ServiceClient
    from molt.models import load_model

    problems = workload(config)

    class InOrder(RLDataset):
        def batches(self, batch_size: int, seed: int = 0):
            return iter([problems[i : i + batch_size] for i in range(0, len(problems), batch_size)])

    rl = RLConfig(adapter="bench", steps=config.warmup_steps + config.steps, batch=config.batch, group_size=config.group_size, lr=s.learning_rate, temperature=s.temperature, max_tokens=s.max_tokens, seed=config.seed)
    engine = EngineConfig(model=config.model, dtype=s.dtype, max_num_seqs=max(16, config.batch * config.group_size))
    steps = []
    with ServerThread(create_app(engine, load_model(config.model))) as url, tempfile.TemporaryDirectory(prefix="molt-bench-rl-") as folder:
        training = ServiceClient(dtype=s.dtype).create_lora_training_client(config.model, rank=s.rank, seed=config.seed, train_unembed="lm_head" in s.targets)
        if config.start is not None:
            training.load_weights(config.start).result()
        sampler = EngineSampler(url + "/v1")
        run = Run(rl, InOrder(), [], training, sampler, Path(folder))
        publish(run, 0)
        for step, batch in enumerate(run.train.batches(config.batch)):
            start = time.perf_counter()
            metrics = train_step(run, step, batch)
            steps.append({
                "seconds": time.perf_counter() - start, "rollout_seconds": metrics["sample_s"], "rollout_tokens": metrics["sampled_tokens"],
                "trained_tokens": metrics.get("trained_tokens", 0), "reward": metrics["reward_mean"], "groups_trained": metrics["groups_kept"],
                "problems": metrics["problems"],
            })  # fmt: skip
        sampler.close()
    return {"steps": steps}


def run_trl(config: RLBenchConfig, s: SideSettings) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig, PeftModel
    from trl import GRPOConfig, GRPOTrainer

    from molt.bench.train import step_clock
    from molt.mint.checkpoints import resolve
    from molt.models import load_model

    problems = workload(config)
    loaded = load_model(config.model, dtype=getattr(torch, s.dtype))
    tokenizer = loaded.tokenizer
    envs = [p.make_envs(1)[0] for p in problems]
    prompts, stop_ids = [env.initial_observation() for env in envs], list(envs[0].stop_token_ids)
    texts = [tokenizer.decode(p) for p in prompts]
    same_tokens = sum(tokenizer(t, add_special_tokens=False)["input_ids"] == p for t, p in zip(texts, prompts)) / len(prompts)
    dataset = Dataset.from_list([{"prompt": text, "problem": i} for i, text in enumerate(texts)])
    rewards: list[tuple[float, list[str]]] = []  # per generation: mean reward, the problems it sampled

    def reward(prompts, completions, completion_ids, problem, **kwargs) -> list[float]:
        values = [_reward(problems[i], ids) for i, ids in zip(problem, completion_ids)]
        rewards.append((statistics.fmean(values), [problems[i].key for i in dict.fromkeys(problem)]))
        return values

    rollouts: list[tuple[float, int]] = []  # (seconds, completion tokens) per generation

    class TimedGRPOTrainer(GRPOTrainer):
        """GRPOTrainer with its generation timed; nothing else changes."""

        def _generate_single_turn(self, *args, **kwargs):
            start = time.perf_counter()
            out = super()._generate_single_turn(*args, **kwargs)
            rollouts.append((time.perf_counter() - start, sum(len(ids) for ids in out[0])))
            return out

    args = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="molt-bench-trl-"), per_device_train_batch_size=config.batch * config.group_size,
        num_generations=config.group_size, max_completion_length=s.max_tokens, temperature=s.temperature, top_k=0, top_p=1.0,
        beta=s.kl_beta, num_iterations=1, scale_rewards="none", shuffle_dataset=False, max_steps=config.warmup_steps + config.steps,
        learning_rate=s.learning_rate, lr_scheduler_type="constant", warmup_steps=0, adam_beta1=s.adam_betas[0], adam_beta2=s.adam_betas[1],
        adam_epsilon=s.adam_eps, weight_decay=0.0, max_grad_norm=s.grad_clip_norm, bf16=s.dtype == "bfloat16", gradient_checkpointing=False,
        use_cpu=True, save_strategy="no", eval_strategy="no", report_to=[], logging_steps=10**9, dataloader_num_workers=0, seed=config.seed,
        use_transformers_continuous_batching=config.trl_generation == "continuous_batching",
        generation_kwargs={"eos_token_id": stop_ids},  # molt's end-of-turn tokens, which the engine stops at
    )  # fmt: skip
    model, lora = loaded.model, LoraConfig(r=s.rank, lora_alpha=s.alpha, lora_dropout=0.0, target_modules=list(s.targets))
    if config.start is not None:
        model, lora = PeftModel.from_pretrained(model, str(resolve(config.start)), is_trainable=True), None
    clock = step_clock()
    trainer = TimedGRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset, processing_class=tokenizer, peft_config=lora, callbacks=[clock])
    trainer.train()
    steps = [
        {"seconds": seconds, "rollout_seconds": rollout[0], "rollout_tokens": rollout[1], "trained_tokens": tokens, "reward": r, "groups_trained": config.batch, "problems": keys}
        for seconds, tokens, rollout, (r, keys) in zip(clock.seconds, clock.tokens, rollouts, rewards, strict=True)
    ]  # fmt: skip
    return {"steps": steps, "prompt_tokens_identical": same_tokens}


def worker(side: str, config: RLBenchConfig) -> None:
    """Entry point of one side's subprocess: prints one JSON line."""
    result = (run_molt if side == "molt" else run_trl)(config, side_settings(config)[side])
    print(json.dumps({**result, "peak_mb": peak_mb()}))


def run_side(side: str, config: RLBenchConfig, console: Console) -> dict:
    console.print(f"[dim]{config.warmup_steps + config.steps} GRPO steps with {SIDES[side]} ...[/]")
    done = subprocess.run([sys.executable, "-m", "molt.bench.rl", side, json.dumps(asdict(config))], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the {side} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def summarise(raw: dict, warmup: int) -> dict:
    """A side's figures over its timed steps."""
    timed = raw["steps"][warmup:]
    if not timed:
        raise ValueError(f"a side ran {len(raw['steps'])} steps, none after {warmup} warm-up steps")
    total = lambda key: sum(step[key] for step in timed)
    train_seconds = total("seconds") - total("rollout_seconds")
    return {
        "timed_steps": len(timed), "seconds_per_step": total("seconds") / len(timed),
        "rollout_tokens_per_s": total("rollout_tokens") / total("rollout_seconds"),
        "training_tokens_per_s": total("trained_tokens") / train_seconds if train_seconds > 0 else 0.0,
        "groups_trained": total("groups_trained"), "reward_last_step": timed[-1]["reward"], "reward_per_step": [step["reward"] for step in raw["steps"]],
        "peak_mb": raw["peak_mb"], "steps": raw["steps"],
    }  # fmt: skip


def check_same_workload(raw: dict, console: Console) -> None:
    """Both sides sampled the same problems at every step (each reports its own), or no figures."""
    molt, trl = ([step["problems"] for step in raw[side]["steps"]] for side in SIDES)
    if molt != trl:
        differ = [i for i in range(max(len(molt), len(trl))) if molt[i : i + 1] != trl[i : i + 1]]
        raise RuntimeError(f"the two sides sampled different problems (steps {differ}): not the same workload")
    if raw["trl"]["prompt_tokens_identical"] < 1:
        console.print(f"[yellow]TRL re-tokenized {1 - raw['trl']['prompt_tokens_identical']:.0%} of molt's prompts to other tokens[/]")


def run(config: RLBenchConfig, console: Console) -> dict:
    workload(config)  # refuse a bad environment before starting either side
    settings = side_settings(config)
    raw = {side: run_side(side, config, console) for side in SIDES}
    check_same_workload(raw, console)
    sides = {side: summarise(r, config.warmup_steps) for side, r in raw.items()}
    molt, trl = sides["molt"], sides["trl"]
    result = {
        "config": asdict(config),
        "settings": {side: asdict(s) for side, s in settings.items()},
        "sides": sides,
        "trl_prompt_tokens_identical": raw["trl"].get("prompt_tokens_identical"),
        "step_speedup": trl["seconds_per_step"] / molt["seconds_per_step"],
        "rollout_speedup": molt["rollout_tokens_per_s"] / trl["rollout_tokens_per_s"],
        "training_speedup": molt["training_tokens_per_s"] / trl["training_tokens_per_s"] if molt["training_tokens_per_s"] and trl["training_tokens_per_s"] else None,
        "peak_memory_ratio": molt["peak_mb"] / trl["peak_mb"],
    }
    print_report(config, settings, sides, result, console)
    return result


def print_report(config: RLBenchConfig, settings: dict[str, SideSettings], sides: dict, result: dict, console: Console) -> None:
    show = lambda v: ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    rows = [[key, *(show(getattr(settings[side], key)) for side in SIDES)] for key in asdict(settings["molt"])]
    print_rows("settings", ["", *SIDES.values()], rows, console)
    print_rows(
        f"GRPO on {config.env}: {config.batch} problems × {config.group_size} samples per step, rank {config.rank}, {config.steps} timed steps",
        ["", "s / step", "rollout tok/s", "training tok/s", "groups trained", "reward (last step)", "peak MB"],
        [[SIDES[side], r["seconds_per_step"], r["rollout_tokens_per_s"], r["training_tokens_per_s"], r["groups_trained"], r["reward_last_step"], r["peak_mb"]] for side, r in sides.items()],
        console,
    )
    training = "-" if result["training_speedup"] is None else f"{result['training_speedup']:.2f}x"
    console.print(
        f"molt vs TRL: {result['step_speedup']:.2f}x faster per step (rollout {result['rollout_speedup']:.2f}x, training {training}), "
        f"peak memory {result['peak_memory_ratio']:.2f}x of TRL's"
    )


if __name__ == "__main__":
    worker(sys.argv[1], RLBenchConfig(**json.loads(sys.argv[2])))
