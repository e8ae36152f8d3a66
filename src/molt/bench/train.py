"""``molt bench train``: SFT throughput and peak memory of molt against TRL ``SFTTrainer`` + PEFT.

Both sides are configured from one ``SideSettings`` each, a pure function of the bench config
(``side_settings``), and each reports what its trainer really ran with, read back from its PEFT
model and optimizer, so the JSON shows the two are alike rather than asserting it:

- **Same model and precision:** the frozen base in the dtype molt's ``dtype="auto"`` resolves to
  (``resolve_dtype``: bf16 where the CPU computes it natively); in bf16 both run the forward under
  bf16 autocast with float32 LoRA weights, gradients and AdamW moments.
- **Same LoRA and optimizer:** rank r, alpha = r (molt's rule), every attention and MLP
  projection, no dropout; AdamW with one constant learning rate, betas, eps and gradient clip.
- **Same data, same batches:** the chats are rendered once by molt's renderer (loss on the
  answer tokens only) and grouped into steps of ``batch_size`` examples of similar length, as
  ``molt train sft`` buckets them. molt takes the steps in order; TRL gets the same tokens and
  labels pre-tokenized, in the same order, with a sequential sampler, so both sides see
  identical batches (the JSON's per-step token counts match).
- **Same clock:** every optimizer step is timed on both sides, from a collated batch to the
  finished optimizer step (molt: ``forward_backward`` + ``optim_step``; TRL: a ``TrainerCallback``
  from ``on_step_begin`` to ``on_step_end``). The first ``warmup_steps`` are run and not timed.
  Tokens are each timed step's example tokens, padding excluded (TRL: ``num_input_tokens_seen``
  with ``non_padding``).

What stays different is each side's implementation: molt runs a step as one packed row with
attention per example and chunked logits; TRL pads each batch to its longest example. Each side
runs in a fresh subprocess, so peak memory (max RSS, model loading included) is its own. TRL is
otherwise as a user would set it up for speed on CPU: no gradient checkpointing, no eval or
saving. ``--trl-packing`` turns TRL's own packing on (rows of ``max_length``), which changes its
examples per step; the settings table then says the sides differ.
"""

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from rich.console import Console

from molt.bench.report import print_rows

SUBJECTS = ["the harbour", "a mountain railway", "the night market", "an old library", "the river delta", "a glass workshop", "the wind farm", "a hill village"]
ASKS = ["Write a short description of {s}.", "Tell me three things a visitor notices about {s}.", "Describe a morning at {s} in a few sentences.", "What makes {s} worth a visit? Answer in a paragraph."]
SENTENCES = [
    "People arrive early, before the light is fully up, and the air smells of {n}.",
    "The first thing you notice is the sound of {n}, steady and unhurried.",
    "Locals greet each other by name and trade news about {n} and the weather.",
    "By midday the place is busy, with children running between stalls of {n}.",
    "Old photographs on the walls show how {n} looked a hundred years ago.",
    "In the evening the crowds thin out and the lamps make {n} glow softly.",
    "Visitors often stay longer than planned, drawn back by {n}.",
]
NOUNS = ["fresh bread", "salt and rope", "cut timber", "warm stone", "rain on tin roofs", "coffee and oranges", "machine oil", "pine resin"]
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
SIDES = {"molt": "molt", "trl": "TRL SFTTrainer + PEFT"}


def bench_conversations(count: int, seed: int = 0) -> list[dict]:
    """Single-turn chats of ~150 tokens: a request and a paragraph-long answer."""
    rng = random.Random(seed)
    rows = []
    for _ in range(count):
        subject = rng.choice(SUBJECTS)
        answer = " ".join(rng.choice(SENTENCES).format(n=rng.choice(NOUNS)) for _ in range(rng.randint(5, 8)))
        rows.append({"messages": [{"role": "user", "content": rng.choice(ASKS).format(s=subject)}, {"role": "assistant", "content": answer}]})
    return rows


@dataclass(frozen=True)
class TrainBenchConfig:
    model: str = "embedded"
    examples: int = 64
    """Chats in the training set (one epoch)."""
    rank: int = 16
    batch_size: int = 8
    """Examples per optimizer step, on both sides."""
    max_length: int = 512
    dtype: str = "auto"
    """auto (bf16 where the CPU computes it natively), float32 or bfloat16, for both sides."""
    trl_packing: bool = False
    seed: int = 0
    warmup_steps: int = 1
    """Steps run before the clock starts, on both sides (one-time kernel and allocator set-up)."""
    learning_rate: float = 2e-4


@dataclass(frozen=True)
class SideSettings:
    """What one side trains with; the side is configured from it and the bench prints it."""

    dtype: str
    """Frozen base weights; bfloat16 also means bf16 autocast, with float32 LoRA weights and moments."""
    rank: int
    alpha: int
    targets: tuple[str, ...]
    examples_per_step: int | None
    """None when TRL packs examples into rows of max_length (a varying number per step)."""
    max_length: int
    learning_rate: float
    """Constant: no warm-up or decay on either side."""
    adam_betas: tuple[float, float]
    adam_eps: float
    grad_clip_norm: float
    warmup_steps: int
    """Run but not timed."""
    timed: str = "each optimizer step: forward + backward + optimizer step"
    tokens: str = "example tokens, padding excluded"


def side_settings(config: TrainBenchConfig) -> dict[str, SideSettings]:
    """Each side's settings, a pure function of the config (and of the CPU, for dtype auto)."""
    from molt.mint.service import resolve_dtype

    common = SideSettings(
        dtype=str(resolve_dtype(config.dtype)).removeprefix("torch."), rank=config.rank, alpha=config.rank, targets=TARGETS,
        examples_per_step=config.batch_size, max_length=config.max_length, learning_rate=config.learning_rate,
        adam_betas=(0.9, 0.999), adam_eps=1e-8, grad_clip_norm=1.0, warmup_steps=config.warmup_steps,
    )
    trl = replace(common, examples_per_step=None) if config.trl_packing else common
    return {"molt": common, "trl": trl}


@dataclass(frozen=True)
class Row:
    tokens: list[int]
    weights: list[float]
    """1.0 on the answer tokens (the loss), 0.0 elsewhere."""


def training_steps(config: TrainBenchConfig) -> list[list[Row]]:
    """The chats rendered and cut to max_length, in steps of batch_size examples of similar length
    (sorted within windows of BUCKET_STEPS steps, as molt train sft does), the full steps in a
    seeded order and a short one, if any, last (a sequential sampler cuts batches the same way)."""
    from molt.models import load_tokenizer
    from molt.models.renderer import get_renderer
    from molt.train.sft import BUCKET_STEPS

    renderer = get_renderer(load_tokenizer(config.model))
    rows = []
    for chat in bench_conversations(config.examples, config.seed):
        example = renderer.supervised_example(chat["messages"])
        row = Row(example.tokens[: config.max_length], example.weights[: config.max_length])
        if any(row.weights[1:]):
            rows.append(row)
    rng = random.Random(config.seed)
    rng.shuffle(rows)
    window = BUCKET_STEPS * config.batch_size
    steps = []
    for start in range(0, len(rows), window):
        bucket = sorted(rows[start : start + window], key=lambda r: len(r.tokens))
        steps += [bucket[i : i + config.batch_size] for i in range(0, len(bucket), config.batch_size)]
    full = [s for s in steps if len(s) == config.batch_size]
    rng.shuffle(full)
    return full + [s for s in steps if len(s) < config.batch_size]


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def observed_lora(model, adapter: str) -> dict:
    """What a PEFT model really trains: its frozen base dtype, and the adapter's dtype, rank, alpha and targets."""
    params = dict(model.named_parameters())
    base = next(p for n, p in params.items() if n.endswith("q_proj.base_layer.weight"))
    lora = next(p for n, p in params.items() if f"lora_A.{adapter}." in n)
    config = model.peft_config[adapter]
    dtype = lambda p: str(p.dtype).removeprefix("torch.")
    return {"dtype": dtype(base), "lora_dtype": dtype(lora), "rank": config.r, "alpha": config.lora_alpha, "targets": sorted(config.target_modules)}


def observed_optimizer(optimizer) -> dict:
    group = optimizer.param_groups[0]
    return {"learning_rate": group["lr"], "adam_betas": list(group["betas"]), "adam_eps": group["eps"], "weight_decay": group["weight_decay"]}


def run_molt(config: TrainBenchConfig, s: SideSettings, steps: list[list[Row]]) -> dict:
    from molt.mint import AdamParams, ServiceClient
    from molt.train.sft import normalised, to_example

    service = ServiceClient(dtype=s.dtype)
    client = service.create_lora_training_client(config.model, rank=s.rank, seed=config.seed, train_unembed=False)
    adam = AdamParams(learning_rate=s.learning_rate, beta1=s.adam_betas[0], beta2=s.adam_betas[1], eps=s.adam_eps, grad_clip_norm=s.grad_clip_norm)
    seconds, tokens = [], []
    for batch in steps:
        data = normalised([to_example(r.tokens, r.weights) for r in batch])  # collated before the clock, as TRL's batch is
        start = time.perf_counter()
        client.forward_backward(data, "cross_entropy")
        client.optim_step(adam).result()
        seconds.append(time.perf_counter() - start)
        tokens.append(sum(len(r.tokens) for r in batch))
    run = service.transport.run(client.model_id)
    observed = {**observed_lora(run.backend.model, run.policy.name), **observed_optimizer(run.policy.optimizer), "examples_per_step": len(steps[0])}
    return {"step_seconds": seconds, "step_tokens": tokens, "observed": observed}


def step_clock():
    """A TrainerCallback timing each optimizer step. ``on_step_begin`` comes after the batch is
    collated, ``on_step_end`` after the optimizer and scheduler step, before logging; the tokens
    are the step's growth of ``num_input_tokens_seen`` (non-padding)."""
    from transformers import TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self):
            self.seconds: list[float] = []
            self.tokens: list[int] = []
            self.start, self.seen = 0.0, 0

        def on_step_begin(self, args, state, control, **kwargs):
            self.start, self.seen = time.perf_counter(), state.num_input_tokens_seen

        def on_step_end(self, args, state, control, **kwargs):
            self.seconds.append(time.perf_counter() - self.start)
            self.tokens.append(state.num_input_tokens_seen - self.seen)

    return StepClock()


def run_trl(config: TrainBenchConfig, s: SideSettings, steps: list[list[Row]]) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    from molt.models import load_model

    rows = [r for step in steps for r in step]
    dataset = Dataset.from_list([{"input_ids": r.tokens, "labels": [t if w else -100 for t, w in zip(r.tokens, r.weights)]} for r in rows])
    loaded = load_model(config.model, dtype=getattr(torch, s.dtype))
    args = SFTConfig(
        output_dir=tempfile.mkdtemp(prefix="molt-bench-trl-"), per_device_train_batch_size=s.examples_per_step or config.batch_size,
        max_length=s.max_length, packing=config.trl_packing, bf16=s.dtype == "bfloat16", gradient_checkpointing=False,
        num_train_epochs=1, learning_rate=s.learning_rate, lr_scheduler_type="constant", warmup_steps=0,
        adam_beta1=s.adam_betas[0], adam_beta2=s.adam_betas[1], adam_epsilon=s.adam_eps, weight_decay=0.0, max_grad_norm=s.grad_clip_norm,
        train_sampling_strategy="sequential", include_num_input_tokens_seen="non_padding",
        use_cpu=True, save_strategy="no", eval_strategy="no", report_to=[], logging_steps=10**9, dataloader_num_workers=0, seed=config.seed,
    )
    lora = LoraConfig(r=s.rank, lora_alpha=s.alpha, lora_dropout=0.0, target_modules=list(s.targets))
    clock = step_clock()
    trainer = SFTTrainer(model=loaded.model, args=args, train_dataset=dataset, processing_class=loaded.tokenizer, peft_config=lora, callbacks=[clock])
    trainer.train()
    observed = {**observed_lora(trainer.model, "default"), **observed_optimizer(trainer.optimizer), "examples_per_step": None if config.trl_packing else args.train_batch_size}
    return {"step_seconds": clock.seconds, "step_tokens": clock.tokens, "observed": observed}


def worker(side: str, config: TrainBenchConfig, data: Path) -> None:
    """Entry point of one side's subprocess: prints one JSON line."""
    steps = [[Row(**r) for r in step] for step in json.loads(data.read_text())]
    result = (run_molt if side == "molt" else run_trl)(config, side_settings(config)[side], steps)
    print(json.dumps({**result, "peak_mb": peak_mb()}))


def run_side(side: str, config: TrainBenchConfig, data: Path, console: Console) -> dict:
    console.print(f"[dim]training with {side} ...[/]")
    command = [sys.executable, "-m", "molt.bench.train", side, json.dumps(asdict(config)), str(data)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the {side} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class SideResult:
    settings: dict
    observed: dict
    """Read back from the side's PEFT model and optimizer after training."""
    step_seconds: list[float]
    step_tokens: list[int]
    warmup_steps: int
    timed_steps: int
    timed_tokens: int
    timed_seconds: float
    tokens_per_s: float
    peak_mb: float


def side_result(settings: SideSettings, raw: dict) -> SideResult:
    """One side's figures over its timed steps: every step after the warm-up ones."""
    seconds, tokens = raw["step_seconds"][settings.warmup_steps :], raw["step_tokens"][settings.warmup_steps :]
    if not seconds:
        raise ValueError(f"a side ran {len(raw['step_seconds'])} steps, none after {settings.warmup_steps} warm-up steps; use more --examples")
    return SideResult(
        asdict(settings), raw["observed"], raw["step_seconds"], raw["step_tokens"], settings.warmup_steps,
        len(seconds), sum(tokens), sum(seconds), sum(tokens) / sum(seconds), raw["peak_mb"],
    )


def run(config: TrainBenchConfig, console: Console) -> dict:
    settings = side_settings(config)
    steps = training_steps(config)
    if len(steps) <= config.warmup_steps:
        raise ValueError(f"{len(steps)} steps of {config.batch_size} examples leave none to time after {config.warmup_steps} warm-up steps; use more --examples")
    with tempfile.TemporaryDirectory(prefix="molt-bench-train-") as folder:
        data = Path(folder) / "steps.json"
        data.write_text(json.dumps([[asdict(r) for r in step] for step in steps]))
        raw = {side: run_side(side, config, data, console) for side in SIDES}
    sides = {side: side_result(settings[side], r) for side, r in raw.items()}
    molt, trl = sides["molt"], sides["trl"]
    result = {
        "config": asdict(config),
        "dataset_tokens": sum(len(r.tokens) for step in steps for r in step),
        "like_for_like": settings["molt"] == settings["trl"] and molt.observed == trl.observed,
        "sides": {side: asdict(r) for side, r in sides.items()},
        "molt_tokens_per_s": molt.tokens_per_s,
        "trl_tokens_per_s": trl.tokens_per_s,
        "speedup": molt.tokens_per_s / trl.tokens_per_s,
        "molt_peak_mb": molt.peak_mb,
        "trl_peak_mb": trl.peak_mb,
        "molt_steps": len(molt.step_seconds),
        "trl_steps": len(trl.step_seconds),
    }
    print_report(config, sides, result, console)
    return result


def print_report(config: TrainBenchConfig, sides: dict[str, SideResult], result: dict, console: Console) -> None:
    show = lambda v: "packed rows" if v is None else ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
    names = list(sides["molt"].settings) + [k for k in sides["molt"].observed if k not in sides["molt"].settings]
    values = lambda r, k: r.observed.get(k, r.settings.get(k))  # what ran, where it was read back
    print_rows("settings (read back from each trainer where it can be)", ["", *SIDES.values()], [[k, *(show(values(r, k)) for r in sides.values())] for k in names], console)
    print_rows(
        f"SFT, {config.examples} chats ({result['dataset_tokens']} tokens), rank {config.rank}, batch {config.batch_size}",
        ["", "tokens/s", "timed steps", "warm-up steps excluded", "timed tokens", "peak MB"],
        [[SIDES[side], r.tokens_per_s, r.timed_steps, r.warmup_steps, r.timed_tokens, r.peak_mb] for side, r in sides.items()],
        console,
    )
    if not result["like_for_like"]:
        console.print("[bold yellow]the two sides' settings differ: not a like-for-like comparison[/]")
    console.print(f"speedup {result['speedup']:.2f}x, peak memory {result['molt_peak_mb'] / result['trl_peak_mb']:.2f}x of TRL's")


if __name__ == "__main__":
    side, config_json, data_path = sys.argv[1:4]
    config = json.loads(config_json)
    worker(side, TrainBenchConfig(**config), Path(data_path))
