"""``molt bench serve``: decode throughput of the engine against its peers, in one run.

Configurations, all with the same prompts, lengths, model dtype and KV-cache dtype:
  (a) raw      the model's own forward loop with a KV cache, greedy, no LoRA: the limit of this
               model in eager PyTorch here;
  (b) base     the molt engine, base model only;
  (c) mixed    the molt engine, one batch mixing 4 distinct adapters;
  (d) hf       transformers static-batch ``generate`` on the base;
  (e) peft     PEFT mixed-adapter ``generate`` (``adapter_names=``) with the same 4 adapters;
  (f) llama.cpp ``llama-server`` (built once from source, see ``molt.bench.llama_cpp``) on the
               same GGUF base with the same 4 adapters as GGUF LoRA, chosen per request: once
               with its weights in the model dtype (``llama``, like for like) and once on the
               GGUF file as shipped (``llama_gguf``, its quantised weights; reported apart);
               and on the base alone (``llama_base``), which shows its own batching without
               LoRA (it batches only requests that use the same adapters).
transformers keeps K/V in the model dtype, so the engine runs with ``kv_cache_dtype`` set to the
model dtype too (its own CPU default is float32, where attention runs faster);
``engine_float32_kv`` adds the engine at that default as two more configurations, reported
apart and not used by the ratios. Each side's settings are a pure function of the config
(``serve_settings``), and the warm-up run reads back the model and KV dtypes each side really
used. Throughput is generated tokens per second of wall time, prefill included: the median of
``repeats`` runs, taken round-robin across configurations. Also: time to first token of a long
conversation, cold and with a prefix-cache hit, and the memory-bandwidth roofline (batch ×
bandwidth ÷ weight bytes) measured in the same run.
"""

import re
import statistics
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from rich.console import Console
from transformers import DynamicCache

from molt.bench import llama_cpp
from molt.bench.llama_cpp import LlamaCppUnavailable, LlamaServer
from molt.bench.report import print_rows
from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.lora.format import read_adapter
from molt.lora.gguf_lora import write_gguf_lora
from molt.lora.synthetic import write_random_adapter
from molt.models import load_model
from molt.models.sources import resolve_source

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
    engine_float32_kv: bool = False
    """Also run the engine with a float32 KV cache (its CPU default), reported apart from the ratios."""
    llama_cpp: bool = True
    """Run llama.cpp as a peer (built on first use; skipped with the reason where it cannot be)."""


@dataclass(frozen=True)
class SideSettings:
    """What one configuration runs with; the bench builds it from this and prints it."""

    model_dtype: str
    kv_cache_dtype: str
    prompt_tokens: int
    new_tokens: int
    batch_sizes: tuple[int, ...]
    adapters: int
    """Distinct LoRA adapters mixed in each batch (rank ``config.rank``, alpha 2r); 0: the base alone."""
    decoding: str = "greedy, EOS ignored"


SIDES = {"raw": "raw loop", "base": "engine base", "mixed": "engine mixed 4", "hf": "hf generate", "peft": "peft mixed 4"}
FLOAT32_KV = {"base_kv32": "engine base, f32 KV", "mixed_kv32": "engine mixed 4, f32 KV"}
LLAMA_CPP = {"llama_base": "llama.cpp base", "llama": "llama.cpp mixed 4", "llama_gguf": "llama.cpp mixed 4, GGUF as shipped"}
NAMES = SIDES | FLOAT32_KV | LLAMA_CPP
ENGINE_SIDES = ("base", "mixed", "base_kv32", "mixed_kv32")


def serve_settings(config: ServeBenchConfig) -> dict[str, SideSettings]:
    """Each configuration's settings, a pure function of the config (and of the CPU, for dtype auto)."""
    dtype = str(EngineConfig(dtype=config.dtype).torch_dtype).removeprefix("torch.")
    same = dict(model_dtype=dtype, kv_cache_dtype=dtype, prompt_tokens=config.prompt_tokens, new_tokens=config.new_tokens, batch_sizes=tuple(config.batch_sizes))
    adapters = lambda side: len(ADAPTERS) if side.startswith(("mixed", "peft")) else 0
    settings = {side: SideSettings(**same, adapters=adapters(side)) for side in SIDES}
    if config.engine_float32_kv and dtype != "float32":
        settings |= {side: SideSettings(**{**same, "kv_cache_dtype": "float32"}, adapters=adapters(side)) for side in FLOAT32_KV}
    return settings


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


def raw_loop(model, prompts: list[list[int]], new_tokens: int) -> DynamicCache:
    with torch.inference_mode():
        cache = DynamicCache(config=model.config)
        out = model(torch.tensor(prompts), past_key_values=cache, use_cache=True)
        token = out.logits[:, -1].argmax(-1, keepdim=True)
        for _ in range(new_tokens - 1):
            out = model(token, past_key_values=cache, use_cache=True)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
    return cache


def hf_generate(model, prompts: list[list[int]], new_tokens: int, **kwargs):
    x = torch.tensor(prompts)
    with torch.inference_mode():
        return model.generate(
            input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=new_tokens, min_new_tokens=new_tokens,
            do_sample=False, pad_token_id=0, **kwargs,
        )


def run(config: ServeBenchConfig, console: Console) -> dict:
    settings = serve_settings(config)
    dtype = getattr(torch, settings["raw"].model_dtype)
    base = load_model(config.model, dtype=dtype)
    root = Path(tempfile.mkdtemp(prefix="molt-bench-"))
    for i, name in enumerate(ADAPTERS):
        write_random_adapter(root / name, base.model, config.model, r=config.rank, lora_alpha=2 * config.rank, seed=i, std=0.02)
    engines = {kv: _engine(config, root, kv) for kv in {settings[s].kv_cache_dtype for s in settings if s in ENGINE_SIDES}}
    peft = _peft_model(config.model, dtype, root)
    figures: dict = {"dtype": settings["raw"].model_dtype, "model": config.model}
    with ExitStack() as stack:
        servers = _llama_servers(config, settings["raw"], base.model.config, root, stack, figures, console)
        settings |= {side: SideSettings(**{**asdict(settings["mixed" if server.loras else "base"]), "model_dtype": server.weights}) for side, server in servers.items()}
        rows = []
        for batch in config.batch_sizes:
            samples, observed = _measure(batch, settings, engines, servers, base, peft, config, console)
            for name, values in samples.items():
                figures[f"{name}_b{batch}_tok_s"] = statistics.median(values)
                figures[f"{name}_b{batch}_samples"] = values
            rows.append([f"batch {batch}"] + [figures[f"{n}_b{batch}_tok_s"] for n in settings])
        figures.update(_agreement(engines[settings["mixed"].kv_cache_dtype], servers, base.tokenizer))
    print_settings(settings, observed, console)
    print_rows("decode throughput, generated tokens/s", ["", *(NAMES[n] for n in settings)], rows, console)
    figures.update(_ttft(engines[settings["mixed"].kv_cache_dtype], base.tokenizer, config))  # the baselines' KV dtype, as the ratios
    figures.update(_ratios(figures, config, base.memory_bytes))
    figures.update(config=asdict(config), settings={side: asdict(s) for side, s in settings.items()}, observed=observed, like_for_like=like_for_like(settings, observed))
    ratios = [[k, figures[k]] for k in ("mixed_vs_raw", "mixed_vs_hf_generate", "mixed_vs_peft", "roofline_fraction", "prefix_hit_ttft_vs_cold")]
    ratios += [[k, figures[k]] for k in figures if k.startswith(("mixed_vs_llama", "base_vs_llama", "llama_cpp_agreement"))]
    ratios += [["ttft cold (s)", figures["ttft_cold_s"]], ["ttft prefix hit (s)", figures["ttft_hit_s"]], ["bandwidth (GB/s)", figures["bandwidth_gb_s"]]]
    print_rows(f"batch {max(config.batch_sizes)}, {figures['dtype']} weights and KV cache on every side", ["ratio", "value"], ratios, console)
    if not figures["like_for_like"]:
        console.print("[bold yellow]the configurations ran with different dtypes: not a like-for-like comparison[/]")
    return figures


def _llama_servers(config: ServeBenchConfig, same: SideSettings, model_config, root: Path, stack: ExitStack, figures: dict, console: Console) -> dict[str, LlamaServer]:
    """The llama.cpp servers (like-for-like weights, and the GGUF as shipped), started and
    entered on ``stack``; none, with the reason printed and kept in ``figures``, where llama.cpp
    cannot run here."""
    source = resolve_source(config.model)
    try:
        if not config.llama_cpp:
            raise LlamaCppUnavailable("not asked for (--no-llama-cpp)")
        if source.kind != "gguf":
            raise LlamaCppUnavailable(f"llama.cpp needs a GGUF base; {config.model!r} is not one")
        bin_dir = llama_cpp.binaries(_build_progress(console))
        loras = [write_gguf_lora(read_adapter(root / n), root / f"{n}.gguf", model_config, getattr(torch, same.model_dtype)) for n in ADAPTERS]
        server = lambda model, loras: stack.enter_context(LlamaServer(bin_dir, model, loras, max(config.batch_sizes), same.prompt_tokens + same.new_tokens + 16, torch.get_num_threads(), same.kv_cache_dtype))
        like_for_like = llama_cpp.gguf_as(bin_dir, source.path, same.model_dtype)
        servers = {"llama_base": server(like_for_like, []), "llama": server(like_for_like, loras), "llama_gguf": server(source.path, loras)}
    except LlamaCppUnavailable as e:
        console.print(f"[yellow]llama.cpp peer skipped: {e}[/]")
        figures["llama_cpp_skipped"] = str(e)
        return {}
    figures["llama_cpp_threads"] = torch.get_num_threads()
    return servers


def _build_progress(console: Console):
    """Prints the build's progress every 10%: a first run compiles llama.cpp for minutes."""
    shown = -10

    def on_line(line: str) -> None:
        nonlocal shown
        if (done := re.match(r"\[\s*(\d+)%\]", line)) and int(done[1]) >= shown + 10:
            shown = int(done[1])
            console.print(f"[dim]building llama.cpp (first run only): {shown}%[/]")

    return on_line


def _measure(batch: int, settings: dict[str, SideSettings], engines: dict[str, LLMEngine], servers: dict[str, LlamaServer], base, peft, config: ServeBenchConfig, console: Console) -> tuple[dict, dict]:
    """(tokens/s samples, dtypes read back) of every configuration at one batch size."""
    prompts = make_prompts(base.tokenizer, batch, config.prompt_tokens)
    names = [ADAPTERS[i % len(ADAPTERS)] for i in range(batch)]
    runs = _runs(settings, engines, servers, base.model, peft, prompts, names, config.new_tokens)
    observed = {name: _warm(name, settings[name], engines, servers, base.model, peft, prompts, names) for name in runs}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for repeat in range(config.repeats):  # round-robin, so drift on a shared machine hits every configuration alike
        for name, fn in runs.items():
            console.print(f"[dim]batch {batch}, run {repeat + 1}/{config.repeats}: {name}…[/]")
            for engine in engines.values():
                engine.prefix.clear()
            samples[name].append(batch * config.new_tokens / timed(fn))
    return samples, observed


def like_for_like(settings: dict[str, SideSettings], observed: dict[str, dict]) -> bool:
    """The compared configurations share every setting but their adapters (base vs mixed by
    design), and each ran with the model and KV dtypes its settings say."""
    shared = {(s.model_dtype, s.kv_cache_dtype, s.prompt_tokens, s.new_tokens, s.batch_sizes, s.decoding) for side, s in settings.items() if side in SIDES}
    ran = all(observed[side] == {"model_dtype": s.model_dtype, "kv_cache_dtype": s.kv_cache_dtype} for side, s in settings.items())
    return len(shared) == 1 and ran


def _engine(config: ServeBenchConfig, root: Path, kv_cache_dtype: str) -> LLMEngine:
    max_len = max(config.prompt_tokens + config.new_tokens, config.conversation_tokens + 64) + 16
    engine_config = EngineConfig(
        model=config.model, dtype=config.dtype, kv_cache_dtype=kv_cache_dtype, adapters_root=root, lora_modules={n: n for n in ADAPTERS},
        max_num_seqs=max(config.batch_sizes), max_prefill_chunk=min(512, max_len), max_model_len=max_len,
    )
    return LLMEngine(engine_config, load_model(config.model))


def _runs(settings: dict[str, SideSettings], engines: dict[str, LLMEngine], servers: dict[str, LlamaServer], model, peft, prompts, names, new_tokens: int) -> dict:
    """One timed callable per configuration, in the settings' order."""
    greedy = SamplingParams(max_tokens=new_tokens, temperature=0, ignore_eos=True)
    on_engine = lambda s: lambda: engines[s.kv_cache_dtype].generate(prompts, greedy, names if s.adapters else None)
    on_llama = lambda server: lambda: server.generate(prompts, _lora_ids(server, names), new_tokens)
    peers = {
        "raw": lambda: raw_loop(model, prompts, new_tokens),
        "hf": lambda: hf_generate(model, prompts, new_tokens),
        "peft": lambda: hf_generate(peft, prompts, new_tokens, adapter_names=names),
    } | {side: on_llama(server) for side, server in servers.items()}
    return {side: peers[side] if side in peers else on_engine(s) for side, s in settings.items()}


def _ratios(figures: dict, config: ServeBenchConfig, weight_bytes: int) -> dict:
    bandwidth = memory_bandwidth()
    top = max(config.batch_sizes)
    mixed = figures[f"mixed_b{top}_tok_s"]
    ours = lambda side: "base" if side == "llama_base" else "mixed"
    llama = {
        f"{ours(side)}_vs_{side.replace('llama', 'llama_cpp')}_b{b}": figures[f"{ours(side)}_b{b}_tok_s"] / figures[f"{side}_b{b}_tok_s"]
        for side in LLAMA_CPP for b in config.batch_sizes if f"{side}_b{b}_tok_s" in figures
    }  # fmt: skip
    return llama | dict(
        bandwidth_gb_s=bandwidth / 1e9,
        weight_bytes=weight_bytes,
        roofline_tok_s=top * bandwidth / weight_bytes,
        roofline_fraction=mixed / (top * bandwidth / weight_bytes),
        mixed_vs_raw=mixed / figures[f"raw_b{top}_tok_s"],
        mixed_vs_hf_generate=mixed / figures[f"hf_b{top}_tok_s"],
        mixed_vs_peft=mixed / figures[f"peft_b{top}_tok_s"],
        prefix_hit_ttft_vs_cold=figures["ttft_hit_s"] / figures["ttft_cold_s"],
    )


def print_settings(settings: dict[str, SideSettings], observed: dict[str, dict], console: Console) -> None:
    """One row per configuration; the dtypes are the ones read back from its warm-up run."""
    rows = [
        [NAMES[side], observed[side]["model_dtype"], observed[side]["kv_cache_dtype"], s.prompt_tokens, s.new_tokens, ", ".join(map(str, s.batch_sizes)), s.adapters]
        for side, s in settings.items()
    ]
    decoding = next(iter(settings.values())).decoding
    print_rows(f"settings ({decoding})", ["", "model dtype", "KV dtype", "prompt", "generated", "batch sizes", "adapters"], rows, console)


def _peft_model(source: str, dtype: torch.dtype, root: Path):
    from peft import PeftModel

    model = PeftModel.from_pretrained(load_model(source, dtype=dtype).model, str(root / ADAPTERS[0]), adapter_name=ADAPTERS[0])
    for name in ADAPTERS[1:]:
        model.load_adapter(str(root / name), adapter_name=name)
    return model.eval()


def _warm(side: str, s: SideSettings, engines: dict[str, LLMEngine], servers: dict[str, LlamaServer], base_model, peft, prompts, names) -> dict:
    """One short run of the same kind, so one-time kernel set-up is not timed; returns the model
    and KV-cache dtypes that run really used."""
    short = [p[:8] for p in prompts]
    if side in servers:
        server = servers[side]
        server.generate(short, _lora_ids(server, names), 2)
        return {"model_dtype": server.weights, "kv_cache_dtype": server.kv_cache_type()}
    if side in ENGINE_SIDES:
        engine = engines[s.kv_cache_dtype]
        engine.generate(short, SamplingParams(max_tokens=2, temperature=0, ignore_eos=True), names if s.adapters else None)
        return _dtypes(engine.model.dtype, engine.cache.k.dtype)
    if side == "raw":
        return _dtypes(base_model.dtype, raw_loop(base_model, short, 2).layers[0].keys.dtype)
    model, extra = (peft, {"adapter_names": names}) if side == "peft" else (base_model, {})
    out = hf_generate(model, short, 2, return_dict_in_generate=True, **extra)
    frozen = next(p for n, p in model.named_parameters() if "lora_" not in n)
    return _dtypes(frozen.dtype, out.past_key_values.layers[0].keys.dtype)


def _dtypes(model: torch.dtype, kv: torch.dtype) -> dict:
    return {"model_dtype": str(model).removeprefix("torch."), "kv_cache_dtype": str(kv).removeprefix("torch.")}


def _lora_ids(server: LlamaServer, names: list[str]) -> list[int | None]:
    """Each row's adapter as llama-server numbers them (its ``--lora`` order); None on a base-only server."""
    return [ADAPTERS.index(n) if server.loras else None for n in names]


def _agreement(engine: LLMEngine, servers: dict[str, LlamaServer], tokenizer, new_tokens: int = 16) -> dict:
    """How far llama.cpp's greedy tokens follow molt's, one prompt per adapter (the share of
    tokens before the first difference): a check that both run the same model and adapters."""
    prompts = make_prompts(tokenizer, len(ADAPTERS), 32)
    greedy = SamplingParams(max_tokens=new_tokens, temperature=0, ignore_eos=True)
    ours = [[t for event in events for t in event.token_ids] for events in engine.generate(prompts, greedy, list(ADAPTERS))]
    figures = {}
    for side, server in servers.items():
        if not server.loras:
            continue
        theirs = server.generate(prompts, list(range(len(ADAPTERS))), new_tokens)
        same = [next((i for i, (a, b) in enumerate(zip(x, y)) if a != b), new_tokens) / new_tokens for x, y in zip(ours, theirs)]
        figures[side.replace("llama", "llama_cpp_agreement")] = statistics.mean(same)
    return figures


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
