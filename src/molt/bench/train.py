"""``molt bench train``: SFT throughput and peak memory of molt against TRL ``SFTTrainer`` + PEFT.

Both sides train the same LoRA (rank r on every attention and MLP projection, alpha = r) on the
same model, the same single-turn chats (loss on the answer only) and the same number of
examples per step, each in a fresh subprocess so peak memory (max RSS, model loading included)
is its own. TRL is configured as a user would for speed on this CPU: bf16 mixed precision where
the CPU computes bf16 natively, no gradient checkpointing, no eval or saving; packing is off by
default because on CPU it is slower (transformers builds a dense mask over the packed row);
``--trl-packing`` turns it on. Throughput is dataset tokens (prompt and answer) per second of
training-loop wall time.
"""

import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
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
    rank: int = 16
    batch_size: int = 8
    max_length: int = 512
    dtype: str = "auto"
    trl_packing: bool = False
    seed: int = 0


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def run_molt(config: TrainBenchConfig, data: Path, tokens: int) -> dict:
    from molt.mint import ServiceClient
    from molt.train.sft import SFTConfig, run_sft

    mean = tokens / config.examples
    sft = SFTConfig(
        adapter=f"bench-{time.time_ns()}", data=data, base_model=config.model, rank=config.rank, train_unembed=False,
        epochs=1, batch_tokens=max(8, round(mean * config.batch_size)), max_length=config.max_length,
        eval_fraction=0.0, save_every=10**9, seed=config.seed,
    )
    result = run_sft(sft, ServiceClient(dtype=config.dtype))
    return {"tokens": result.train_tokens, "seconds": result.train_tokens / result.tokens_per_s, "steps": result.steps}


def run_trl(config: TrainBenchConfig, data: Path, tokens: int) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from trl import SFTConfig, SFTTrainer

    from molt.mint.service import resolve_dtype
    from molt.models import load_model

    rows = [json.loads(line) for line in data.read_text().splitlines()]
    dataset = Dataset.from_list([{"prompt": r["messages"][:-1], "completion": r["messages"][-1:]} for r in rows])
    loaded = load_model(config.model)
    args = SFTConfig(
        output_dir=tempfile.mkdtemp(prefix="molt-bench-trl-"), per_device_train_batch_size=config.batch_size,
        max_length=config.max_length, packing=config.trl_packing, bf16=resolve_dtype(config.dtype) == torch.bfloat16,
        gradient_checkpointing=False, num_train_epochs=1, learning_rate=2e-4, use_cpu=True, save_strategy="no",
        eval_strategy="no", report_to=[], logging_steps=10**9, dataloader_num_workers=0, seed=config.seed,
    )
    lora = LoraConfig(r=config.rank, lora_alpha=config.rank, lora_dropout=0.0, target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
    trainer = SFTTrainer(model=loaded.model, args=args, train_dataset=dataset, processing_class=loaded.tokenizer, peft_config=lora)
    start = time.perf_counter()
    trainer.train()
    return {"tokens": tokens, "seconds": time.perf_counter() - start, "steps": trainer.state.global_step}


def worker(side: str, config: TrainBenchConfig, data: Path, tokens: int) -> None:
    """Entry point of one side's subprocess: prints one JSON line."""
    result = (run_molt if side == "molt" else run_trl)(config, data, tokens)
    print(json.dumps({**result, "peak_mb": peak_mb()}))


def run_side(side: str, config: TrainBenchConfig, data: Path, tokens: int, console: Console) -> dict:
    console.print(f"[dim]training with {side} ...[/]")
    command = [sys.executable, "-m", "molt.bench.train", side, json.dumps(asdict(config)), str(data), str(tokens)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the {side} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(config: TrainBenchConfig, console: Console) -> dict:
    from molt.models import load_tokenizer
    from molt.models.renderer import get_renderer

    rows = bench_conversations(config.examples, config.seed)
    renderer = get_renderer(load_tokenizer(config.model))
    tokens = sum(min(config.max_length, len(renderer.render(r["messages"]))) for r in rows)
    with tempfile.TemporaryDirectory(prefix="molt-bench-train-") as folder:
        data = Path(folder) / "chats.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        molt, trl = (run_side(side, config, data, tokens, console) for side in ("molt", "trl"))
    molt_speed, trl_speed = molt["tokens"] / molt["seconds"], trl["tokens"] / trl["seconds"]
    result = {
        "config": asdict(config),
        "dataset_tokens": tokens,
        "molt_tokens_per_s": molt_speed,
        "trl_tokens_per_s": trl_speed,
        "speedup": molt_speed / trl_speed,
        "molt_peak_mb": molt["peak_mb"],
        "trl_peak_mb": trl["peak_mb"],
        "molt_steps": molt["steps"],
        "trl_steps": trl["steps"],
    }
    print_rows(
        f"SFT, {config.examples} chats ({tokens} tokens), rank {config.rank}, batch {config.batch_size}",
        ["", "tokens/s", "peak MB", "steps"],
        [["molt", molt_speed, molt["peak_mb"], molt["steps"]], ["TRL SFTTrainer + PEFT", trl_speed, trl["peak_mb"], trl["steps"]]],
        console,
    )
    console.print(f"speedup {result['speedup']:.2f}x, peak memory {molt['peak_mb'] / trl['peak_mb']:.2f}x of TRL's")
    return result


if __name__ == "__main__":
    side, config_json, data_path, token_count = sys.argv[1:5]
    worker(side, TrainBenchConfig(**json.loads(config_json)), Path(data_path), int(token_count))
