"""``molt bench serve``: decode throughput of the engine against its peers, in one run.

Configurations, all with the same prompts, lengths and serving dtype:
  (a) raw      the model's own forward loop with a KV cache, greedy, no LoRA: the limit of this
               model in eager PyTorch here;
  (b) base     the molt engine, base model only;
  (c) mixed    the molt engine, one batch mixing 4 distinct adapters;
  (d) hf       transformers static-batch ``generate`` on the base;
  (e) peft     PEFT mixed-adapter ``generate`` (``adapter_names=``) with the same 4 adapters.
Throughput is generated tokens per second of wall time, prefill included: the median of
``repeats`` runs, taken round-robin across configurations. Also: time to first
token of a long conversation, cold and with a prefix-cache hit, and the memory-bandwidth
roofline (batch × bandwidth ÷ weight bytes) measured in the same run.
"""

import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from rich.console import Console
from transformers import DynamicCache

from molt.bench.report import print_rows
from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.lora.synthetic import write_random_adapter
from molt.models import load_model

TEXT = (
    "The river town woke slowly. Bakers lit their ovens, fishermen checked their nets, and the "
    "schoolteacher walked along the quay reading a letter from her brother, who wrote about "
    "mountains, trains, markets, weather, old friends and the price of bread in the capital. "
)
ADAPTERS = ("a0", "a1", "a2", "a3")


@dataclass(frozen=True)
class ServeBenchConfig:
    model: str = "embedded"
    batch_sizes: tuple[int, ...] = (1, 16)
    prompt_tokens: int = 64
    new_tokens: int = 64
    rank: int = 16
    conversation_tokens: int = 1000
    dtype: str = "auto"
    repeats: int = 3


def make_prompts(tokenizer, count: int, length: int) -> list[list[int]]:
    ids = tokenizer.encode(TEXT * (1 + (count * 7 + length) // 40), add_special_tokens=False)
    return [ids[i * 7 : i * 7 + length] for i in range(count)]


def memory_bandwidth() -> float:
    """Bytes per second of reading a 1 GiB tensor (float32 sum: vectorised, memory-bound)."""
    data = torch.ones(2**28, dtype=torch.float32)
    data.sum()
    start = time.perf_counter()
    for _ in range(3):
        data.sum()
    return 3 * data.numel() * 4 / (time.perf_counter() - start)


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def raw_loop(model, prompts: list[list[int]], new_tokens: int) -> None:
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        out = model(torch.tensor(prompts), past_key_values=cache, use_cache=True)
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(new_tokens - 1):
            out = model(token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1].argmax(-1, keepdim=True)


def hf_generate(model, prompts: list[list[int]], new_tokens: int, **kwargs) -> None:
    x = torch.tensor(prompts)
    with torch.inference_mode():
        model.generate(
            input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
            do_sample=False, pad_token_id=0, **kwargs,
        )


def run(config: ServeBenchConfig, console: Console) -> dict:
    dtype = EngineConfig(dtype=config.dtype).torch_dtype
    base = load_model(config.model, dtype=dtype)
    root = Path(tempfile.mkdtemp(prefix="molt-bench-"))
    for i, name in enumerate(ADAPTERS):
        write_random_adapter(root / name, base.model, config.model, r=config.rank, lora_alpha=2 * config.rank, seed=i, std=0.02)
    max_len = max(config.prompt_tokens + config.new_tokens, config.conversation_tokens + 64) + 16
    engine_config = EngineConfig(
        model=config.model, dtype=config.dtype, adapters_root=root, lora_modules={n: n for n in ADAPTERS},
        max_num_seqs=max(config.batch_sizes), max_prefill_chunk=min(512, max_len), max_model_len=max_len,
    )
    engine = LLMEngine(engine_config, load_model(config.model))
    greedy = SamplingParams(max_tokens=config.new_tokens, temperature=0, ignore_eos=True)
    peft = _peft_model(config.model, dtype, root)
    figures: dict = {"dtype": str(dtype).removeprefix("torch."), "model": config.model}
    rows = []
    for batch in config.batch_sizes:
        prompts = make_prompts(base.tokenizer, batch, config.prompt_tokens)
        names = [ADAPTERS[i % len(ADAPTERS)] for i in range(batch)]
        runs = {
            "raw": lambda: raw_loop(base.model, prompts, config.new_tokens),
            "base": lambda: engine.generate(prompts, greedy),
            "mixed": lambda: engine.generate(prompts, greedy, names),
            "hf": lambda: hf_generate(base.model, prompts, config.new_tokens),
            "peft": lambda: hf_generate(peft, prompts, config.new_tokens, adapter_names=names),
        }
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for name, fn in runs.items():
            _warm(name, fn, prompts, engine, base.model, peft, names)
        for repeat in range(config.repeats):  # round-robin, so drift on a shared machine hits every configuration alike
            for name, fn in runs.items():
                console.print(f"[dim]batch {batch}, run {repeat + 1}/{config.repeats}: {name}…[/]")
                engine.prefix.clear()
                samples[name].append(batch * config.new_tokens / timed(fn))
        for name, values in samples.items():
            figures[f"{name}_b{batch}_tok_s"] = statistics.median(values)
            figures[f"{name}_b{batch}_samples"] = values
        rows.append([f"batch {batch}"] + [figures[f"{n}_b{batch}_tok_s"] for n in runs])
    print_rows("decode throughput, generated tokens/s", ["", "raw", "engine base", "engine mixed 4", "hf generate", "peft mixed 4"], rows, console)
    figures.update(_ttft(engine, base.tokenizer, config))
    bandwidth = memory_bandwidth()
    weight_bytes = base.memory_bytes
    top = max(config.batch_sizes)
    mixed = figures[f"mixed_b{top}_tok_s"]
    figures.update(
        bandwidth_gb_s=bandwidth / 1e9,
        weight_bytes=weight_bytes,
        roofline_tok_s=top * bandwidth / weight_bytes,
        roofline_fraction=mixed / (top * bandwidth / weight_bytes),
        mixed_vs_raw=mixed / figures[f"raw_b{top}_tok_s"],
        mixed_vs_hf_generate=mixed / figures[f"hf_b{top}_tok_s"],
        mixed_vs_peft=mixed / figures[f"peft_b{top}_tok_s"],
        prefix_hit_ttft_vs_cold=figures["ttft_hit_s"] / figures["ttft_cold_s"],
        config=asdict(config),
    )
    ratios = [[k, figures[k]] for k in ("mixed_vs_raw", "mixed_vs_hf_generate", "mixed_vs_peft", "roofline_fraction", "prefix_hit_ttft_vs_cold")]
    ratios += [["ttft cold (s)", figures["ttft_cold_s"]], ["ttft prefix hit (s)", figures["ttft_hit_s"]], ["bandwidth (GB/s)", figures["bandwidth_gb_s"]]]
    print_rows(f"batch {top}, {figures['dtype']}", ["ratio", "value"], ratios, console)
    return figures


def _peft_model(source: str, dtype: torch.dtype, root: Path):
    from peft import PeftModel

    model = PeftModel.from_pretrained(load_model(source, dtype=dtype).model, str(root / ADAPTERS[0]), adapter_name=ADAPTERS[0])
    for name in ADAPTERS[1:]:
        model.load_adapter(str(root / name), adapter_name=name)
    return model.eval()


def _warm(name, fn, prompts, engine, base_model, peft, names) -> None:
    """One short run of the same kind, so one-time kernel set-up is not timed."""
    short = [p[:8] for p in prompts]
    params = SamplingParams(max_tokens=2, temperature=0, ignore_eos=True)
    if name == "raw":
        raw_loop(base_model, short, 2)
    elif name in ("base", "mixed"):
        engine.generate(short, params, names if name == "mixed" else None)
    else:
        hf_generate(peft if name == "peft" else base_model, short, 2, **({"adapter_names": names} if name == "peft" else {}))


def _ttft(engine: LLMEngine, tokenizer, config: ServeBenchConfig) -> dict:
    """Time to first token of a long conversation on one adapter, cold and when it comes back."""
    engine.prefix.clear()
    conversation = make_prompts(tokenizer, 1, config.conversation_tokens)[0]
    params = SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)
    cold_start = time.perf_counter()
    engine.add_request("ttft-cold", conversation, params, ADAPTERS[0])
    cold, answer = _first_token_time(engine, "ttft-cold", cold_start)
    follow_up = conversation + answer + tokenizer.encode(" And then what happened next?", add_special_tokens=False)
    hit_start = time.perf_counter()
    engine.add_request("ttft-hit", follow_up, params, ADAPTERS[0])
    hit, _ = _first_token_time(engine, "ttft-hit", hit_start)
    return {"ttft_cold_s": cold, "ttft_hit_s": hit, "ttft_conversation_tokens": len(conversation)}


def _first_token_time(engine: LLMEngine, request_id: str, start: float) -> tuple[float, list[int]]:
    first, tokens = None, []
    while engine.has_work():
        for out in engine.step():
            if out.request_id == request_id:
                tokens += out.token_ids
                first = first or time.perf_counter() - start
    return first, tokens
