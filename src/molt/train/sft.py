"""Supervised fine-tuning of one LoRA adapter on a chat JSONL file, through the MinT API only
(in-process, or a ``molt mint serve`` server), so the same recipe runs against any
Tinker-protocol backend.

- Each conversation is rendered by the base's renderer; only assistant tokens carry weight.
- Packing: each optimizer step takes whole examples up to ``batch_tokens`` tokens, of similar
  length (bucketed); the backend runs them as one packed row. Weights are divided by the step's
  trained-token count, so the loss is the mean NLL per assistant token.
- A seeded held-out split gives the eval loss (before training, every ``eval_every`` steps, at
  the end). The data order is a pure function of the seed, so a run resumed from a checkpoint
  (weights and AdamW moments) continues exactly where it stopped.
- The run's manifest (``$MOLT_HOME/train/<adapter>/manifest.json``) records the config, the data
  hash, the last checkpoint and, at the end, the adapter revision the engine serves.
"""

import hashlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from molt.home import molt_home, write_atomic
from molt.jsonfile import read_json_object
from molt.mint import AdamParams, Datum, ModelInput, ServiceClient, TrainingClient
from molt.models.renderer import get_renderer
from molt.train.config import SFTConfig
from molt.train.data import ChatExample, DatasetError, read_chat_jsonl


@dataclass
class Example:
    datum: Datum
    tokens: int
    trained: float
    """Number of weighted target tokens."""


@dataclass
class StepReport:
    step: int
    total_steps: int
    loss: float
    tokens_per_s: float
    eval_loss: float | None


@dataclass
class SFTResult:
    adapter: str
    revision: str
    """The served revision, ``molt://<run>/<adapter>``."""
    state: str
    """The final training state (weights and AdamW moments), to continue training from."""
    steps: int
    train_tokens: int
    tokens_per_s: float
    """Training tokens (prompt and answer) per second of forward_backward + optim_step."""
    eval_loss_before: float | None
    eval_loss_after: float | None
    losses: list[float]
    manifest: Path


class ResumeError(ValueError):
    """--resume was asked for but there is nothing matching to resume, or a run is in the way."""


def run_dir(adapter: str) -> Path:
    return molt_home() / "train" / adapter


def to_example(tokens: list[int], weights: list[float]) -> Example | None:
    if len(tokens) < 2 or not any(weights[1:]):
        return None
    datum = Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights[1:]})
    return Example(datum, len(tokens) - 1, float(sum(weights[1:])))


def prepare(chats: list[ChatExample], config: SFTConfig, tokenizer) -> tuple[list[Example], list[Example], int]:
    """Train and eval examples, and how many were dropped (no trained token left after the cut)."""
    renderer = get_renderer(tokenizer)
    examples, dropped = [], 0
    for chat in chats:
        try:
            rendered = renderer.supervised_example(chat.messages, chat.tools, config.train_on)
        except ValueError as e:
            raise DatasetError(f"{config.data}:{chat.line}: {e}") from None
        example = to_example(rendered.tokens[: config.max_length], rendered.weights[: config.max_length])
        dropped += example is None
        if example is not None:
            examples.append(example)
    if not examples:
        raise DatasetError(f"{config.data}: no example has an assistant token within max_length={config.max_length}")
    random.Random(config.seed).shuffle(examples)
    n_eval = min(len(examples) - 1, max(1, round(len(examples) * config.eval_fraction))) if config.eval_fraction > 0 else 0
    return examples[n_eval:], examples[:n_eval], dropped


def pack(examples: list[Example], batch_tokens: int) -> list[list[Example]]:
    """Consecutive examples grouped greedily into steps of at most batch_tokens tokens."""
    steps, current, size = [], [], 0
    for example in examples:
        if current and size + example.tokens > batch_tokens:
            steps.append(current)
            current, size = [], 0
        current.append(example)
        size += example.tokens
    return steps + [current] if current else steps


BUCKET_STEPS = 16
"""Steps' worth of examples sorted by length together, so each step's sequences are alike in
length: the packed attention pads every sequence of a step to its longest (1.5x faster on
mixed-length tool-use data)."""


def schedule(examples: list[Example], config: SFTConfig) -> list[list[Example]]:
    """The whole run's steps: each epoch shuffled by (seed, epoch), bucketed by length, packed,
    and the steps shuffled again."""
    mean_tokens = sum(e.tokens for e in examples) / len(examples)
    window = max(1, round(BUCKET_STEPS * config.batch_tokens / mean_tokens))
    steps = []
    for epoch in range(config.epochs):
        order = list(examples)
        random.Random(f"{config.seed}:{epoch}").shuffle(order)
        epoch_steps = []
        for start in range(0, len(order), window):
            epoch_steps += pack(sorted(order[start : start + window], key=lambda e: e.tokens), config.batch_tokens)
        random.Random(f"{config.seed}:{epoch}:steps").shuffle(epoch_steps)
        steps += epoch_steps
    return steps[: config.max_steps] if config.max_steps else steps


def normalised(batch: list[Example]) -> list[Datum]:
    """The batch with weights divided by its trained-token count (summed loss → mean NLL)."""
    total = sum(e.trained for e in batch)
    return [
        Datum(model_input=e.datum.model_input, loss_fn_inputs={**e.datum.loss_fn_inputs, "weights": e.datum.loss_fn_inputs["weights"].to_torch() / total})
        for e in batch
    ]


def eval_loss(client: TrainingClient, examples: list[Example], batch_tokens: int) -> float | None:
    if not examples:
        return None
    nll, trained = 0.0, 0.0
    for batch in pack(examples, batch_tokens):
        out = client.forward([e.datum for e in batch], "cross_entropy").result()
        nll += out.metrics["loss:sum"]
        trained += sum(e.trained for e in batch)
    return nll / trained


def data_hash(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_manifest(adapter: str) -> dict | None:
    path = run_dir(adapter) / "manifest.json"
    return read_json_object(path, ResumeError) if path.is_file() else None


def write_manifest(adapter: str, manifest: dict) -> Path:
    return write_atomic(run_dir(adapter) / "manifest.json", json.dumps(manifest, indent=2))


def finished(config: SFTConfig) -> SFTResult | None:
    """The result of a finished run of ``config`` on the same data, if there is one (nothing to train)."""
    manifest = read_manifest(config.adapter)
    if manifest is None or manifest.get("revision") is None:
        return None
    if manifest.get("config") != config.model_dump(mode="json") or manifest.get("data_sha256") != data_hash(config.data):
        return None
    return SFTResult(
        config.adapter, manifest["revision"], manifest["state"], manifest["step"], 0, 0.0,
        manifest.get("eval_loss_before"), manifest.get("eval_loss_after"), manifest["losses"], run_dir(config.adapter) / "manifest.json",
    )


def train_or_resume(
    config: SFTConfig, service: ServiceClient, on_start: Callable[[int, int, int, int], None], on_step: Callable[[StepReport], None]
) -> SFTResult:
    """A finished run of ``config`` on the same data as it is; an interrupted one resumed from its
    last checkpoint; one stopped before its first checkpoint started over; else a new run."""
    done = finished(config)
    if done is not None:
        on_start(done.steps, done.steps, 0, 0)
        return done
    manifest = read_manifest(config.adapter)
    resume = manifest is not None and manifest.get("revision") is None and manifest.get("state") is not None
    if manifest is not None and manifest.get("revision") is None and not resume:
        (run_dir(config.adapter) / "manifest.json").unlink()
    return run_sft(config, service, resume=resume, on_start=on_start, on_step=on_step)


def run_sft(
    config: SFTConfig,
    service: ServiceClient | None = None,
    resume: bool = False,
    on_step: Callable[[StepReport], None] | None = None,
    on_start: Callable[[int, int, int, int], None] | None = None,
) -> SFTResult:
    """Train; ``on_start(total_steps, first_step, n_train, n_eval)`` and ``on_step`` report progress."""
    chats = read_chat_jsonl(config.data)  # every data error surfaces before any model work
    service = service or ServiceClient(dtype="auto")
    identity = {"config": config.model_dump(mode="json"), "data_sha256": data_hash(config.data)}
    manifest = read_manifest(config.adapter)
    if resume:
        if manifest is None or manifest.get("state") is None:
            raise ResumeError(f"nothing to resume for adapter {config.adapter!r}: no checkpoint under {run_dir(config.adapter)}")
        if {k: manifest[k] for k in identity} != identity:
            raise ResumeError(f"the checkpoint of {config.adapter!r} was made with other settings or data; resume with the same ones")
    elif manifest is not None and manifest.get("revision") is None:
        raise ResumeError(f"adapter {config.adapter!r} has an unfinished run at step {manifest['step']}; pass --resume to continue it, or delete {run_dir(config.adapter)} to start over")

    train, held_out, _ = prepare(chats, config, service.get_tokenizer(config.base_model))
    steps = schedule(train, config)
    client = service.create_lora_training_client(config.base_model, rank=config.rank, seed=config.seed, train_unembed=config.train_unembed)
    first = 0
    if resume:
        client.load_state_with_optimizer(manifest["state"]).result()
        first = manifest["step"]
        losses = manifest["losses"]
        before = manifest["eval_loss_before"]
    else:
        if config.init_from:
            client.load_weights(config.init_from).result()
        losses = []
        before = eval_loss(client, held_out, config.batch_tokens)
        manifest = {**identity, "step": 0, "state": None, "revision": None, "losses": losses, "eval_loss_before": before}
    if on_start:
        on_start(len(steps), first, len(train), len(held_out))

    tokens, seconds, latest_eval = 0, 0.0, before
    for step in range(first, len(steps)):
        batch = steps[step]
        lr = config.learning_rate * (1 - step / len(steps) if config.lr_schedule == "linear" else 1.0)
        start = time.perf_counter()
        out = client.forward_backward(normalised(batch), "cross_entropy")
        client.optim_step(AdamParams(learning_rate=lr)).result()
        seconds += time.perf_counter() - start
        tokens += sum(e.tokens for e in batch)
        losses.append(out.result().metrics["loss:sum"])
        done = step + 1
        if config.eval_every and done % config.eval_every == 0 and done < len(steps):
            latest_eval = eval_loss(client, held_out, config.batch_tokens)
        if done % config.save_every == 0 and done < len(steps):
            manifest.update(step=done, state=client.save_state(f"step-{done}").result(), losses=losses)
            write_manifest(config.adapter, manifest)
        if on_step:
            on_step(StepReport(done, len(steps), losses[-1], tokens / seconds, latest_eval))

    after = eval_loss(client, held_out, config.batch_tokens)
    revision = client.save_weights_for_sampler(config.adapter).result()
    manifest.update(step=len(steps), state=client.save_state("final").result(), revision=revision, losses=losses, eval_loss_after=after)
    path = write_manifest(config.adapter, manifest)
    return SFTResult(config.adapter, revision, manifest["state"], len(steps), tokens, tokens / seconds if seconds else 0.0, before, after, losses, path)
