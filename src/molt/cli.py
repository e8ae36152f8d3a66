"""The ``molt`` command. Each verb is one job and calls one package entry point."""

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from molt import __version__
from molt.models import LoadedModel, ModelLoadError, load_model

COMING = "Coming next: proxy serve, mint serve, train, rl, evolve, hcp, registry."
SOURCE_HELP = "Base model: 'embedded', 'tiny', 'tiny:qwen3', a Hugging Face model folder, or a .gguf file."

app = typer.Typer(
    help="molt: one frozen base model, specialist LoRA adapters, and an agent that keeps learning.",
    epilog=COMING,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
models_app = typer.Typer(help="Inspect base models.", no_args_is_help=True)
app.add_typer(models_app, name="models")
bench_app = typer.Typer(help="Benchmarks: molt and its peers side by side, with ratios.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")
engine_app = typer.Typer(help="The multi-LoRA inference engine (OpenAI + vLLM adapter API).", no_args_is_help=True)
app.add_typer(engine_app, name="engine")
console = Console()
err = Console(stderr=True)

Source = Annotated[str, typer.Option("--model", "-m", help=SOURCE_HELP)]


def _load(source: str) -> LoadedModel:
    try:
        loaded = load_model(source)
    except ModelLoadError as e:
        err.print(f"[bold red]error:[/] {e}")
        raise typer.Exit(2) from None
    origin = {"hit": "from cache", "converted": "converted to cache", "none": ""}[loaded.cache]
    err.print(
        f"[dim]{source}: {loaded.model_type}, {loaded.num_parameters / 1e6:.1f}M parameters, "
        f"loaded in {loaded.load_seconds:.2f} s {origin}[/]"
    )
    return loaded


@app.command()
def up() -> None:
    """Prepare the embedded model (converted once into the cache) and open a chat on it."""
    from molt.chat import ChatSession, interactive

    interactive(ChatSession(_load("embedded")), console)


@app.command()
def chat(
    message: Annotated[Optional[str], typer.Argument(help="Answer this one message; omit for an interactive chat.")] = None,
    model: Source = "embedded",
    max_tokens: Annotated[int, typer.Option(min=1, help="Most tokens in one answer.")] = 256,
    temperature: Annotated[float, typer.Option(min=0.0, help="0 is greedy; higher samples more freely.")] = 0.0,
    top_p: Annotated[float, typer.Option(min=0.0, max=1.0, help="Nucleus sampling mass.")] = 1.0,
    seed: Annotated[int, typer.Option(help="Sampling seed.")] = 0,
    system: Annotated[Optional[str], typer.Option(help="System prompt (default: the model's own).")] = None,
) -> None:
    """Chat with a base model: answer MESSAGE, or without it open an interactive chat."""
    from molt.chat import ChatSession, ChatSettings, interactive, stream_answer

    settings = ChatSettings(max_tokens=max_tokens, temperature=temperature, top_p=top_p, seed=seed, system=system)
    session = ChatSession(_load(model), settings)
    if message is None:
        interactive(session, console)
    else:
        stream_answer(session, message, console)


@models_app.command("info")
def models_info(source: Annotated[str, typer.Argument(help=SOURCE_HELP)] = "embedded") -> None:
    """Print a base model's architecture, parameters, dtype, memory and load time."""
    loaded = _load(source)
    config = loaded.model.config
    table = Table(title=f"molt model: {source}", show_header=False)
    rows = {
        "architecture": f"{loaded.model_type} ({type(loaded.model).__name__})",
        "layers × hidden": f"{config.num_hidden_layers} × {config.hidden_size}",
        "parameters": f"{loaded.num_parameters:,}",
        "dtype": str(loaded.dtype).removeprefix("torch."),
        "memory": f"{loaded.memory_bytes / 2**20:.1f} MiB",
        "vocabulary": f"{len(loaded.tokenizer):,}",
        "load time": f"{loaded.load_seconds:.2f} s",
        "cache": loaded.cache,
        "path": str(loaded.path) if loaded.path else "(built in memory)",
    }
    for key, value in rows.items():
        table.add_row(key, value)
    console.print(table)


def _engine_help(field: str) -> str:
    from molt.engine.config import EngineConfig

    return EngineConfig.model_fields[field].description or ""


@engine_app.command("serve")
def engine_serve(
    model: Source = "embedded",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8001,
    dtype: Annotated[str, typer.Option(help=_engine_help("dtype"))] = "auto",
    kv_cache_dtype: Annotated[str, typer.Option(help=_engine_help("kv_cache_dtype"))] = "auto",
    max_num_seqs: Annotated[int, typer.Option(help=_engine_help("max_num_seqs"))] = 16,
    max_model_len: Annotated[int, typer.Option(help=_engine_help("max_model_len"))] = 2048,
    max_prefill_chunk: Annotated[int, typer.Option(help=_engine_help("max_prefill_chunk"))] = 256,
    prefix_cache_mb: Annotated[int, typer.Option(help=_engine_help("prefix_cache_mb"))] = 512,
    adapters_root: Annotated[Optional[Path], typer.Option(help=_engine_help("adapters_root"))] = None,
    lora: Annotated[Optional[list[str]], typer.Option(help="Adapter to load at start, as NAME=PATH (repeatable).")] = None,
    served_model_name: Annotated[Optional[str], typer.Option(help=_engine_help("served_model_name"))] = None,
) -> None:
    """Serve a base model and its LoRA adapters over the OpenAI API (vLLM-compatible adapter routes)."""
    from pydantic import ValidationError

    from molt.engine.config import EngineConfig
    from molt.engine.server import create_app
    from molt.http_server import serve
    from molt.lora.format import AdapterError

    pairs = [item.partition("=") for item in lora or []]
    if any(not name or not path for name, _, path in pairs):
        err.print("[bold red]error:[/] --lora takes NAME=PATH")
        raise typer.Exit(2)
    options = dict(
        model=model, dtype=dtype, kv_cache_dtype=kv_cache_dtype, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
        max_prefill_chunk=max_prefill_chunk, prefix_cache_mb=prefix_cache_mb,
        lora_modules={name: path for name, _, path in pairs}, served_model_name=served_model_name,
    )
    try:
        config = EngineConfig(**options, **({"adapters_root": adapters_root} if adapters_root else {}))
        app = create_app(config, _load(model))
    except (ValidationError, AdapterError) as e:
        err.print(f"[bold red]error:[/] {e}")
        raise typer.Exit(2) from None
    err.print(f"molt engine: {config.base_name} on http://{host}:{port}/v1 (dtype {config.torch_dtype}, adapters root {config.adapters_root})")
    serve(app, host, port)


@bench_app.command("serve")
def bench_serve(
    model: Source = "embedded",
    batch_sizes: Annotated[str, typer.Option(help="Comma-separated batch sizes.")] = "1,16",
    prompt_tokens: Annotated[int, typer.Option(min=1, help="Tokens per prompt.")] = 64,
    new_tokens: Annotated[int, typer.Option(min=2, help="Tokens generated per sequence.")] = 64,
    rank: Annotated[int, typer.Option(min=1, help="Rank of the 4 benchmark adapters.")] = 16,
    conversation_tokens: Annotated[int, typer.Option(min=16, help="Length of the conversation for time to first token.")] = 1000,
    dtype: Annotated[str, typer.Option(help="Serving dtype for every configuration: auto, float32 or bfloat16.")] = "auto",
    repeats: Annotated[int, typer.Option(min=1, help="Timed runs per configuration (the median is reported).")] = 3,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Decode throughput of the engine (base and 4 mixed adapters) against the raw forward loop,
    transformers generate and PEFT mixed-adapter generate; prefix-cache time to first token."""
    from molt.bench.report import print_json
    from molt.bench.serve import ServeBenchConfig, run

    sizes = tuple(int(b) for b in batch_sizes.split(","))
    config = ServeBenchConfig(model, sizes, prompt_tokens, new_tokens, rank, conversation_tokens, dtype, repeats)
    result = run(config, err if json_output else console)
    if json_output:
        print_json(result)


def _version(value: bool) -> None:
    if value:
        console.print(f"molt {__version__}")
        raise typer.Exit()


@app.callback()
def main_options(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    """molt: one frozen base model, specialist LoRA adapters, and an agent that keeps learning."""


def main() -> None:
    app()
