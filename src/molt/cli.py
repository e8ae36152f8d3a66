"""The ``molt`` command. Each verb is one job and calls one package entry point."""

from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.table import Table

from molt import __version__
from molt.models import LoadedModel, ModelLoadError, load_model

COMING = "Coming next: engine serve, proxy serve, mint serve, train, rl, evolve, bench, hcp, registry."
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
