"""``molt bench longstraw``: peak memory and time of one RL step on a group sharing a long prompt,
the plain packed path against LongStraw (``molt.mint.longstraw``, prompt detached) and LongStraw
exact (the prompt's gradient carried too), over group sizes and prompt lengths, plus the
gradient each gives against plain backprop.

Each point is one ``forward_backward`` + ``optim_step`` of the importance-sampling loss on G
datums: one random prompt of L tokens (seeded, from the whole vocabulary) and G different random
responses, advantages ±1 on the responses. Both paths run the same MinT backend in a fresh
subprocess, with the same settings: the base in the dtype ``auto`` resolves to, memory-efficient
attention past ``SDPA_FROM`` tokens, and activation checkpointing with checkpointed logit chunks
in every forward (``--checkpoint-from 1``), the plain path's best setting for memory (without it,
1K prompts × G=2 took 7.8 GB and × G=4, checkpointed, 2.6 GB).
Peak memory is the process's high-water RSS during the step, measured after the model is loaded
(``/proc/self/clear_refs`` resets it), so it is model + step; ``step GB`` is the growth over the
loaded process. The first step of a fresh process is what is timed (its allocations included).

A point is skipped, not run, when the path's seconds per token so far predict a step over
``--max-step-s``, or its memory so far (linear in tokens with a graph) predicts more than
``--memory-gb``; the longest prompt that fits at the largest group is then extrapolated and
labelled so.

Gradients (float32, one point): LongStraw's against plain backprop with the prompt's keys and
values detached (what it computes; the cosine should be 1 up to float sums) and against full
backprop (the approximation it makes), and exact mode's against full backprop, on a policy one
optimizer step away from its zero init.
"""

import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console

from molt.bench.report import print_rows

PATHS = {"plain": ("off", False), "longstraw": ("on", False), "exact": ("on", True)}
"""Each path: LongStraw's mode and its ``exact`` flag."""
LABELS = {"plain": "plain", "longstraw": "LongStraw", "exact": "LongStraw exact"}


@dataclass(frozen=True)
class LongStrawBenchConfig:
    model: str = "embedded"
    groups: tuple[int, ...] = (1, 2, 4, 8)
    lengths: tuple[int, ...] = (1024, 2048, 4096, 8192)
    response: int = 128
    rank: int = 16
    dtype: str = "auto"
    checkpoint_from: int = 1
    """Both paths checkpoint layers in a forward with more tokens than this (1: always)."""
    memory_gb: float = 24.0
    max_step_s: float = 120.0
    gradient_length: int = 1024
    gradient_group: int = 4
    seed: int = 0
    plot: str | None = None


def bench_group(vocab: int, prompt: int, response: int, size: int, seed: int):
    import torch

    from molt.mint.types import Datum, ModelInput

    g = torch.Generator().manual_seed(seed)
    shared = torch.randint(0, vocab, (prompt,), generator=g).tolist()
    data = []
    for i in range(size):
        tokens = shared + torch.randint(0, vocab, (response,), generator=g).tolist()
        acting = [0.0] * (prompt - 1) + [1.0] * response
        inputs = {"target_tokens": tokens[1:], "logprobs": [-1.0 * a for a in acting], "advantages": [(-1.0) ** i * a for a in acting]}
        data.append(Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs=inputs))
    return data


def _status_gb(key: str) -> float:
    kb = re.search(rf"^{key}:\s+(\d+) kB", Path("/proc/self/status").read_text(), re.M)
    return int(kb.group(1)) / 2**20


def _backend(config: LongStrawBenchConfig, path: str, dtype: str):
    from molt.mint.backend import LocalBackend
    from molt.mint.longstraw import LongStraw
    from molt.mint.service import resolve_dtype
    from molt.mint.types import LoraConfig

    mode, exact = PATHS[path]
    backend = LocalBackend(config.model, resolve_dtype(dtype), long_context=LongStraw(mode, checkpoint_from=config.checkpoint_from, exact=exact))
    return backend, backend.create_policy("bench", LoraConfig(rank=config.rank, seed=config.seed))


def measure_point(config: LongStrawBenchConfig, path: str, group: int, length: int) -> dict:
    """One step in this (fresh) process: seconds, peak and step GB."""
    from molt.mint.types import AdamParams

    backend, policy = _backend(config, path, config.dtype)
    data = bench_group(len(backend.tokenizer), length, config.response, group, config.seed)
    loaded = _status_gb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark to the current RSS
    started = time.perf_counter()
    out = backend.forward_backward(policy, data, "importance_sampling", None)
    backend.optim_step(policy, AdamParams(learning_rate=1e-4))
    seconds = time.perf_counter() - started
    peak = _status_gb("VmHWM")
    return {"seconds": seconds, "peak_gb": peak, "step_gb": peak - loaded, "loaded_gb": loaded, "longstraw_groups": out.metrics.get("longstraw_groups:sum", 0.0)}


def detached_prompt_backward(backend, policy, data: list, prompt: int, loss: str = "importance_sampling") -> None:
    """The reference LongStraw's gradient must equal: plain packed backprop of ``data`` with the
    keys and values of each datum's first ``prompt`` positions detached (accumulated into .grad)."""
    import torch

    from molt.mint.backend import loss_inputs
    from molt.mint.losses import resolve_loss

    fn, _, loss_config = resolve_loss(loss, None)
    tokens = [d.model_input.to_ints() for d in data]
    inputs = [loss_inputs(d) for d in data]
    detached = torch.cat([torch.arange(len(t)) < prompt for t in tokens])
    logprobs = backend._logprobs(policy, tokens, torch.cat([i["target_tokens"] for i in inputs]), True, forward_kwargs={"molt_detached": detached})
    sum(fn(lp, i, loss_config) for lp, i in zip(logprobs, inputs)).backward()


def measure_gradients(config: LongStrawBenchConfig) -> dict:
    """Cosines and max relative error of LongStraw's gradient against the two references."""
    import torch

    from molt.mint.longstraw import LongStraw
    from molt.mint.types import AdamParams

    backend, policy = _backend(config, "plain", "float32")
    data = bench_group(len(backend.tokenizer), config.gradient_length, config.response, config.gradient_group, config.seed)
    backend.forward_backward(policy, data, "importance_sampling", None)
    backend.optim_step(policy, AdamParams(learning_rate=1e-3))  # lora_B leaves zero: every weight has a gradient

    def taken() -> torch.Tensor:
        grad = torch.cat([p.grad.flatten() for p in policy.parameters])
        policy.optimizer.zero_grad(set_to_none=True)
        return grad

    backend.forward_backward(policy, data, "importance_sampling", None)
    full = taken()
    backend.long_context = LongStraw("on", checkpoint_from=config.checkpoint_from, exact=True)
    backend.forward_backward(policy, data, "importance_sampling", None)
    exact = taken()
    backend.long_context = LongStraw("on", checkpoint_from=config.checkpoint_from)
    backend.forward_backward(policy, data, "importance_sampling", None)
    longstraw = taken()
    detached_prompt_backward(backend, policy, data, config.gradient_length - 1)
    reference = taken()

    def compare(mine: torch.Tensor, other: torch.Tensor) -> dict:
        cosine = float(torch.nn.functional.cosine_similarity(mine.double(), other.double(), 0))
        return {"cosine": cosine, "max_relative_error": float((mine - other).abs().max() / other.abs().max())}

    return {
        "prompt": config.gradient_length, "group": config.gradient_group,
        "vs_detached_prompt": compare(longstraw, reference), "vs_full_backprop": compare(longstraw, full), "exact_vs_full_backprop": compare(exact, full),
    }  # fmt: skip


def _subprocess(config: LongStrawBenchConfig, task: dict) -> dict:
    command = [sys.executable, "-m", "molt.bench.longstraw", json.dumps(asdict(config)), json.dumps(task)]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        oom = done.returncode in (-9, 137) or "can't allocate memory" in done.stderr or "MemoryError" in done.stderr
        if oom:
            return {"error": "out of memory"}
        raise RuntimeError(f"the {task} run failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _skip_reason(done: list[dict], config: LongStrawBenchConfig, tokens: int) -> str | None:
    """Predict from this path's measured points: seconds per graph token, GB per graph token."""
    ok = [p for p in done if "seconds" in p]
    if not ok:
        return None
    largest = max(ok, key=lambda p: p["graph_tokens"])
    predicted_s = largest["seconds"] / largest["graph_tokens"] * tokens
    if predicted_s > config.max_step_s:
        return f"predicted {predicted_s:.0f} s > {config.max_step_s:.0f} s"
    predicted_gb = largest["loaded_gb"] + largest["step_gb"] / largest["graph_tokens"] * tokens
    if predicted_gb > config.memory_gb:
        return f"predicted {predicted_gb:.1f} GB > {config.memory_gb:.0f} GB"
    if any(p.get("error") == "out of memory" and p["graph_tokens"] <= tokens for p in done):
        return "a smaller point ran out of memory"
    return None


def _longest_at(points: list[dict], path: str, group: int, config: LongStrawBenchConfig, positions: int) -> dict:
    """The longest prompt measured to fit at ``group``; past it, a linear fit of peak GB on prompt
    length (this path's points at that group, else all its points scaled by tokens) extrapolates."""
    mine = [p for p in points if p["path"] == path and "seconds" in p]
    at_group = [p for p in mine if p["group"] == group]
    measured = max((p["length"] for p in at_group), default=0)
    fit = at_group if len({p["length"] for p in at_group}) >= 2 else mine
    if len({p["graph_tokens"] for p in fit}) < 2:
        return {"measured": measured, "extrapolated": None}
    xs = [p["graph_tokens"] for p in fit]
    ys = [p["peak_gb"] for p in fit]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / sum((x - mean_x) ** 2 for x in xs)
    if slope <= 0:
        return {"measured": measured, "extrapolated": positions}
    tokens = mean_x + (config.memory_gb - mean_y) / slope
    per_prompt_token = group if path == "plain" else 1
    longest = int((tokens - config.response * per_prompt_token) / per_prompt_token)
    return {"measured": measured, "extrapolated": min(longest, positions), "capped_by_positions": longest >= positions}


def graph_tokens(path: str, group: int, length: int, response: int) -> int:
    """Tokens whose activations one forward holds for the backward: all of them on the plain
    path, the prompt (no graph, but its K/V) plus one response on LongStraw."""
    return group * (length + response) if path == "plain" else length + response


def run(config: LongStrawBenchConfig, console: Console) -> dict:
    from rich.progress import Progress

    from molt.models import load_model

    positions = load_model(config.model).model.config.max_position_embeddings
    lengths = sorted({min(length, positions - config.response) for length in config.lengths})
    points: list[dict] = []
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("longstraw bench", total=len(lengths) * len(config.groups) * len(PATHS) + 1)
        for length in lengths:
            for group in sorted(config.groups):
                for path in PATHS:
                    progress.update(task, description=f"{path} L={length} G={group}")
                    point = {"path": path, "group": group, "length": length, "graph_tokens": graph_tokens(path, group, length, config.response)}
                    reason = _skip_reason([p for p in points if p["path"] == path], config, point["graph_tokens"])
                    point |= {"skipped": reason} if reason else _subprocess(config, {"point": [path, group, length]})
                    points.append(point)
                    progress.advance(task)
        progress.update(task, description="gradients")
        gradients = _subprocess(config, {"gradients": True})
        progress.advance(task)
    largest = max(config.groups)
    result = {
        "config": asdict(config) | {"lengths": lengths},
        "points": points,
        "gradients": gradients,
        "longest_prompt_at_largest_group": {path: _longest_at(points, path, largest, config, positions - config.response) for path in PATHS},
        "peak_growth_smallest_to_largest_group": _growth(points, config),
    }
    report(result, console)
    if config.plot:
        result["plot"] = str(draw(points, Path(config.plot)))
        console.print(f"plot: {result['plot']}")
    return result


def _growth(points: list[dict], config: LongStrawBenchConfig) -> dict:
    """Per path and prompt length: peak GB at the largest group over the smallest (where both ran)."""
    small, large = min(config.groups), max(config.groups)
    growth: dict[str, dict[str, float]] = {}
    for path in PATHS:
        for length in sorted({p["length"] for p in points}):
            at = {p["group"]: p for p in points if p["path"] == path and p["length"] == length and "peak_gb" in p}
            if small in at and large in at:
                growth.setdefault(path, {})[str(length)] = at[large]["peak_gb"] / at[small]["peak_gb"] - 1
    return growth


def report(result: dict, console: Console) -> None:
    config = result["config"]
    rows = []
    for length in config["lengths"]:
        for group in sorted(config["groups"]):
            cells = {p["path"]: p for p in result["points"] if p["length"] == length and p["group"] == group}
            row: list = [length, group]
            for path in PATHS:
                p = cells[path]
                row += [p["peak_gb"], p["step_gb"], p["seconds"]] if "seconds" in p else [p.get("skipped") or p.get("error"), "", ""]
            rows.append(row)
    columns = ["prompt", "G"] + [f"{LABELS[path]} {figure}" for path in PATHS for figure in ("peak GB", "step GB", "s")]
    checkpointing = "always" if config["checkpoint_from"] <= 1 else f"past {config['checkpoint_from']} tokens"
    title = f"One RL step, {config['model']} ({config['dtype']}), response {config['response']} tokens, LoRA rank {config['rank']}, checkpointing {checkpointing}"
    print_rows(title, columns, rows, console)
    ratios = []
    for length in config["lengths"]:
        for group in sorted(config["groups"]):
            cells = {p["path"]: p for p in result["points"] if p["length"] == length and p["group"] == group and "seconds" in p}
            if "plain" in cells:
                ratios.append([length, group] + [f"{cells['plain']['peak_gb'] / cells[path]['peak_gb']:.2f}x / {cells['plain']['seconds'] / cells[path]['seconds']:.2f}x" if path in cells else "" for path in PATHS if path != "plain"])
    print_rows("plain ÷ LongStraw: peak memory / seconds", ["prompt", "G"] + [LABELS[path] for path in PATHS if path != "plain"], ratios, console)
    for path, growth in result["peak_growth_smallest_to_largest_group"].items():
        figures = ", ".join(f"L={length}: {share:+.1%}" for length, share in growth.items())
        console.print(f"{LABELS[path]}: peak memory G={min(config['groups'])} → G={max(config['groups'])}: {figures}")
    for path, longest in result["longest_prompt_at_largest_group"].items():
        more = f", ≈{longest['extrapolated']} extrapolated to {config['memory_gb']:.0f} GB" if longest.get("extrapolated") else ""
        capped = " (the model's positions)" if longest.get("capped_by_positions") else ""
        console.print(f"{LABELS[path]}: longest prompt at G={max(config['groups'])}: {longest['measured']} measured{more}{capped}")
    g = result["gradients"]
    console.print(
        f"gradients (float32, prompt {g['prompt']}, G={g['group']}): cosine vs plain backprop with the prompt detached "
        f"{g['vs_detached_prompt']['cosine']:.6f} (max relative error {g['vs_detached_prompt']['max_relative_error']:.2e}); "
        f"vs full backprop {g['vs_full_backprop']['cosine']:.4f}; exact mode vs full backprop {g['exact_vs_full_backprop']['cosine']:.6f} "
        f"(max relative error {g['exact_vs_full_backprop']['max_relative_error']:.2e})"
    )


def draw(points: list[dict], path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, seconds) = plt.subplots(1, 2, figsize=(10, 4))
    lengths = sorted({p["length"] for p in points})
    colours = plt.cm.viridis([i / max(1, len(lengths) - 1) for i in range(len(lengths))])
    for length, colour in zip(lengths, colours):
        for name, style in (("plain", "--o"), ("longstraw", "-s"), ("exact", ":^")):
            ran = sorted((p["group"], p["peak_gb"], p["seconds"]) for p in points if p["path"] == name and p["length"] == length and "seconds" in p)
            if ran:
                groups, peaks, times = zip(*ran)
                label = f"{LABELS[name]} L={length}"
                memory.plot(groups, peaks, style, color=colour, label=label)
                seconds.plot(groups, times, style, color=colour, label=label)
    for axis, ylabel in ((memory, "peak RSS (GB)"), (seconds, "seconds per step")):
        axis.set_xlabel("group size G")
        axis.set_ylabel(ylabel)
        axis.set_xscale("log", base=2)
        axis.grid(alpha=0.3)
    seconds.set_yscale("log")
    memory.legend(fontsize=7)
    figure.suptitle("One RL step on a shared prompt: plain packed path (dashed), LongStraw (solid), LongStraw exact (dotted)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def main() -> None:
    raw, task = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    config = LongStrawBenchConfig(**raw | {"groups": tuple(raw["groups"]), "lengths": tuple(raw["lengths"])})
    result = measure_gradients(config) if task.get("gradients") else measure_point(config, *task["point"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
