"""The ``molt`` command. Each verb is one job and calls one package entry point."""

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, Optional

import typer
from rich.console import Console
from rich.table import Table

from molt import __version__
from molt.http_api import API_KEY_ENV
from molt.proxy.limits import Limits
from molt.models.errors import ModelLoadError

if TYPE_CHECKING:
    from molt.models import LoadedModel

COMING = "Coming next: personal memory and the living bench."
SOURCE_HELP = "Base model: 'embedded', 'tiny', 'tiny:qwen3', a Hugging Face model folder, or a .gguf file."

app = typer.Typer(
    help="molt: one frozen base model, specialist LoRA adapters, and an agent that keeps learning.",
    epilog=COMING,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def command_group(name: str, help: str) -> typer.Typer:
    """A ``molt NAME ...`` group of subcommands."""
    group = typer.Typer(help=help, no_args_is_help=True)
    app.add_typer(group, name=name)
    return group


models_app = command_group("models", "Inspect base models.")
bench_app = command_group("bench", "Benchmarks: molt and its peers side by side, with ratios.")
engine_app = command_group("engine", "The multi-LoRA inference engine (OpenAI + vLLM adapter API).")
mint_app = command_group("mint", "MinT, the Tinker-compatible LoRA training API.")
train_app = command_group("train", "Training recipes on the MinT API.")
proxy_app = command_group("proxy", "The Mixture-of-LoRA routing proxy (OpenAI chat API).")
hcp_app = command_group("hcp", "HCP, the versioned TOML contract that recreates a runtime.")
specialists_app = command_group("specialists", "The default specialists: train them and write the HCP that serves them.")
router_app = command_group("router", "Trained routers: fit one on labelled requests, score one on held-out requests.")
experience_app = command_group("experience", "The experience log: every turn the proxy served, with feedback; export it to train on.")
registry_app = command_group("registry", "Records of every base, adapter revision, HCP, pair, dataset, job and evaluation; aliases and their moves.")
console = Console()
err = Console(stderr=True)
PROXY_LIMITS = Limits()
API_KEY_HELP = "Key every API request must carry, as a bearer token or X-API-Key (401 without it); default: no auth."


def fail(error: object, code: int = 2) -> NoReturn:
    """Print ``error`` the way every command reports one, and exit with ``code``."""
    err.print(f"[bold red]error:[/] {error}")
    raise typer.Exit(code)


def _check_engine_kind(kind: str) -> None:
    from molt.engine.adapter_client import ENGINE_KINDS

    if kind not in ENGINE_KINDS:
        fail(f"--engine-kind must be one of {', '.join(ENGINE_KINDS)}, not {kind!r}")

Source = Annotated[str, typer.Option("--model", "-m", help=SOURCE_HELP)]
TrainedHcp = Annotated[Optional[Path], typer.Option(help="The HCP to use; default: the bootstrapped one (`molt specialists bootstrap`).")]
DbOption = Annotated[Optional[str], typer.Option("--db", help="Registry database: any SQLAlchemy URL (postgresql://user@host/db); default $MOLT_DB, else a SQLite file in $MOLT_HOME.")]
Actor = Annotated[Optional[str], typer.Option(help="Who makes the move, for the record; default: your login name.")]


def _load(source: str) -> "LoadedModel":
    from molt.models import load_model

    try:
        loaded = load_model(source)
    except ModelLoadError as e:
        fail(e)
    origin = {"hit": "from cache", "converted": "converted to cache", "none": ""}[loaded.cache]
    err.print(
        f"[dim]{source}: {loaded.model_type}, {loaded.num_parameters / 1e6:.1f}M parameters, "
        f"loaded in {loaded.load_seconds:.2f} s {origin}[/]"
    )
    return loaded


@app.command()
def up(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP to run; default: the registry's production pair (trained on first start).")] = None,
    host: Annotated[str, typer.Option(help="Address of the chat page and API.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the chat page and the proxy's OpenAI API.")] = 8000,
    engine_port: Annotated[int, typer.Option(help="Port of the engine (OpenAI + vLLM adapter API).")] = 8001,
    bootstrap: Annotated[bool, typer.Option(help="Without --hcp: on first start, train the default specialists in the background while serving (minutes, once; cached in $MOLT_HOME).")] = True,
    learn: Annotated[bool, typer.Option("--learn/--no-learn", help="Continual mode: a low-priority worker runs a `molt evolve` generation each time [learning] min_new_turns new turns are logged (serving the registry's production pair).")] = True,
    engine_url: Annotated[Optional[str], typer.Option(help="Serve through this running OpenAI-compatible multi-LoRA engine (http://host:port/v1) instead of starting molt's: the pair's adapters are loaded into it through its own routes. It must serve the HCP's base under that name (vLLM: --served-model-name) and see molt's adapters folder.")] = None,
    engine_kind: Annotated[str, typer.Option(help="What --engine-url is: vllm (started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=true), sglang (--enable-lora) or molt.")] = "vllm",
    db: DbOption = None,
) -> None:
    """Start the stack on the embedded model: engine, routing proxy and chat page at
    http://127.0.0.1:8000. With questions piped on stdin, answer them and exit.

    The first start serves at once with the base answering, while the four default specialists
    and the router train in the background (minutes on two cores, once; progress in the log, on
    the page and in /health); each specialist is served as soon as it is trained.

    With --engine-url, an engine already running (vLLM, SGLang) serves instead of molt's: see
    docs/scale-out.md."""
    from molt.engine.adapter_client import EngineAdapterError
    from molt.hcp import load_hcp
    from molt.registry.pairs import PRODUCTION
    from molt.specialists.bootstrap import bootstrapped_path
    from molt.stack import run_stack

    _use_db(db)
    registry = _registry(None)  # the database the stack keeps its state in: a bad --db fails here, clearly
    contract, first_start, pair = None, False, None
    if hcp is None and bootstrap:
        production = registry.resolve_alias(PRODUCTION)
        if production is not None:
            contract, pair = _pair_hcp(registry, production[0]), production[0]
            err.print(f"[dim]serving {PRODUCTION}: pair {production[0]} (since {production[1].at:%Y-%m-%d %H:%M}, {production[1].reason})[/]")
        elif bootstrapped_path(load_hcp()).is_file():
            contract = _hcp(bootstrapped_path(load_hcp()))
        else:
            first_start = True
    contract = contract or _hcp(hcp)
    _check_engine_kind(engine_kind)
    loaded = None if engine_url else _load(contract.model.base)
    try:
        run_stack(contract, loaded, host, port, engine_port, console, err, train=first_start, pair=pair, learn=learn, engine_url=engine_url, engine_kind=engine_kind)
    except EngineAdapterError as e:
        fail(e, 1)


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


@app.command()
def doctor() -> None:
    """What this machine gives molt: the action sandbox's isolation mode, bubblewrap, the embedded
    model, Chromium, PostgreSQL. Exits 1 when a part is missing or the sandbox runs its weaker fallback."""
    from molt.doctor import checks

    table = Table("part", "ok", "detail")
    found = checks()
    for check in found:
        table.add_row(check.part, "[green]yes[/]" if check.ok else "[red]no[/]", check.detail)
    console.print(table)
    if not all(c.ok for c in found):
        raise typer.Exit(1)


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
    api_key: Annotated[Optional[str], typer.Option(help=API_KEY_HELP, envvar=API_KEY_ENV, show_envvar=True)] = None,
) -> None:
    """Serve a base model and its LoRA adapters over the OpenAI API (vLLM-compatible adapter routes)."""
    from pydantic import ValidationError

    from molt.engine.config import EngineConfig
    from molt.engine.server import create_app
    from molt.http_server import serve
    from molt.lora.format import AdapterError

    pairs = [item.partition("=") for item in lora or []]
    if any(not name or not path for name, _, path in pairs):
        fail("--lora takes NAME=PATH")
    options = dict(
        model=model, dtype=dtype, kv_cache_dtype=kv_cache_dtype, max_num_seqs=max_num_seqs, max_model_len=max_model_len,
        max_prefill_chunk=max_prefill_chunk, prefix_cache_mb=prefix_cache_mb,
        lora_modules={name: path for name, _, path in pairs}, served_model_name=served_model_name,
    )
    try:
        config = EngineConfig(**options, **({"adapters_root": adapters_root} if adapters_root else {}))
        app = create_app(config, _load(model), token=api_key)
    except (ValidationError, AdapterError) as e:
        fail(e)
    auth = "API key required" if api_key else "no auth"
    err.print(f"molt engine: {config.base_name} on http://{host}:{port}/v1 (dtype {config.torch_dtype}, adapters root {config.adapters_root}, {auth})")
    serve(app, host, port)


@mint_app.command("serve")
def mint_serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8002,
    dtype: Annotated[str, typer.Option(help="Training dtype: auto (bfloat16 where the CPU has it natively), float32 or bfloat16.")] = "auto",
    base: Annotated[Optional[list[str]], typer.Option(help="A base model source clients may train and sample (repeatable); default: embedded.")] = None,
    api_key: Annotated[Optional[str], typer.Option(help=API_KEY_HELP, envvar=API_KEY_ENV, show_envvar=True)] = None,
    longstraw: Annotated[str, typer.Option(help="Datums sharing a prompt train with the prompt computed once, without autograd (LongStraw): auto (groups sharing ≥ --longstraw-min-prefix tokens), on (any shared loss-free prefix) or off.")] = "auto",
    longstraw_min_prefix: Annotated[int, typer.Option(help="Shared tokens from which auto uses LongStraw.")] = 512,
    prefix_reuse_steps: Annotated[int, typer.Option(help="Keep a prompt's LongStraw state across this many optimizer steps when it comes back (stale by up to that many steps); 0: off.")] = 0,
    longstraw_exact: Annotated[bool, typer.Option("--longstraw-exact", help="Also carry the gradient through the shared prompt (one more checkpointed pass over it): full backprop's gradient, memory still flat in the group size.")] = False,
    ray: Annotated[Optional[str], typer.Option(help="Train in Ray actors, one per base with its runs multiplexed on it, at this cluster address (ray://host:10001, host:6379) or 'local' (a cluster started here); a worker that dies is replaced and its runs resume from their last saved state. Needs the scale extra (pip install 'molt[scale]').")] = None,
    ray_worker_cpus: Annotated[Optional[float], typer.Option(help="CPUs each Ray worker reserves (also its PyTorch threads); default: as many as this machine has.")] = None,
) -> None:
    """Serve MinT over the Tinker HTTP protocol: the tinker SDK (TINKER_BASE_URL, a tml- key) or
    molt's ServiceClient(base_url=...) train and sample here. Only the bases named by --base are
    served, with caps on LoRA rank, runs, samples and queue depth. Runs live in memory: after a
    restart, resume from a saved state (create_training_client_from_state). With --ray the runs
    train on a Ray cluster and this process is their HTTP front."""
    from molt.http_server import serve
    from molt.mint.longstraw import LongStraw
    from molt.mint.server import create_app
    from molt.mint.service import LocalService, MintLimits

    try:
        long_context = LongStraw(longstraw, longstraw_min_prefix, reuse_steps=prefix_reuse_steps, exact=longstraw_exact)
        limits = MintLimits(bases=tuple(base or ["embedded"]))
        if ray:
            from molt.mint.ray_service import RayService

            service = RayService(ray, dtype, limits, long_context, ray_worker_cpus)
        else:
            service = LocalService(dtype, limits, long_context)
    except ModuleNotFoundError as e:
        fail(f"--ray needs Ray: pip install 'molt[scale]' ({e})")
    except (ValueError, ConnectionError) as e:
        fail(e)
    auth = "API key required" if api_key else "no auth"
    where = f"Ray workers at {ray}" if ray else "in this process"
    err.print(f"molt mint: http://{host}:{port} (bases {', '.join(service.limits.bases)}; dtype {str(service.dtype).removeprefix('torch.')}; training {where}; LongStraw {longstraw}{' exact' if longstraw_exact else ''}; checkpoints under $MOLT_HOME; {auth})")
    serve(create_app(service, token=api_key), host, port)


def _sft_help(field: str) -> str:
    from molt.train.config import SFTConfig

    return SFTConfig.model_fields[field].description or ""


SFT_FLAGS = {"learning_rate": "--lr", "base_model": "--model"}


@train_app.command("sft")
def train_sft(
    data: Annotated[Path, typer.Option(help=_sft_help("data"))],
    adapter: Annotated[str, typer.Option(help=_sft_help("adapter"))],
    model: Source = "embedded",
    rank: Annotated[int, typer.Option(help=_sft_help("rank"))] = 16,
    lr: Annotated[float, typer.Option(help=_sft_help("learning_rate"))] = 2e-4,
    lr_schedule: Annotated[str, typer.Option(help=_sft_help("lr_schedule"))] = "linear",
    epochs: Annotated[int, typer.Option(help=_sft_help("epochs"))] = 1,
    max_steps: Annotated[Optional[int], typer.Option(help=_sft_help("max_steps"))] = None,
    batch_tokens: Annotated[int, typer.Option(help=_sft_help("batch_tokens"))] = 2048,
    max_length: Annotated[int, typer.Option(help=_sft_help("max_length"))] = 1024,
    eval_fraction: Annotated[float, typer.Option(help=_sft_help("eval_fraction"))] = 0.1,
    eval_every: Annotated[int, typer.Option(help=_sft_help("eval_every"))] = 0,
    save_every: Annotated[int, typer.Option(help=_sft_help("save_every"))] = 50,
    seed: Annotated[int, typer.Option(help=_sft_help("seed"))] = 0,
    train_on: Annotated[str, typer.Option(help=_sft_help("train_on"))] = "all_assistant",
    dtype: Annotated[str, typer.Option(help="Training dtype: auto (bfloat16 where native), float32 (exact) or bfloat16.")] = "auto",
    resume: Annotated[bool, typer.Option("--resume", help="Continue this adapter's interrupted run from its last checkpoint.")] = False,
    init_from: Annotated[Optional[str], typer.Option(help="Train on from an adapter revision instead of a fresh LoRA: a molt:// revision path, or a specialist's label (agent, chat, …) for the production pair's revision of it. Its rank, and whether it adapts the unembedding, are the revision's own.")] = None,
    mint_url: Annotated[Optional[str], typer.Option(help="Train on a `molt mint serve` server instead of in this process.")] = None,
    engine_url: Annotated[Optional[str], typer.Option(help="Load the finished adapter into this running engine (no restart).")] = None,
    engine_kind: Annotated[str, typer.Option(help="What --engine-url is: molt, vllm or sglang (they load adapters differently).")] = "molt",
    json_output: Annotated[bool, typer.Option("--json", help="Print the result as one JSON object.")] = False,
    db: DbOption = None,
) -> None:
    """Fine-tune a LoRA adapter on chat JSONL (assistant tokens only), with packing, a held-out
    eval loss, checkpoints and --resume; the result is an adapter revision the engine serves,
    registered with its dataset and job (`molt registry promote` puts it into production)."""
    _check_engine_kind(engine_kind)
    import dataclasses
    import json

    from pydantic import ValidationError

    from molt.mint import ServiceClient
    from molt.train.data import DatasetError
    from molt.train.sft import ResumeError, SFTConfig, run_sft

    train_unembed = True
    if init_from is not None:
        init_from, start = _continued(init_from)
        rank, train_unembed = start.r, any(module.endswith("lm_head") for module in start.weights)
    try:
        config = SFTConfig(
            adapter=adapter, data=data, base_model=model, rank=rank, learning_rate=lr, lr_schedule=lr_schedule, epochs=epochs,
            max_steps=max_steps, batch_tokens=batch_tokens, max_length=max_length, eval_fraction=eval_fraction,
            eval_every=eval_every, save_every=save_every, seed=seed, train_on=train_on, init_from=init_from, train_unembed=train_unembed,
        )
        service = ServiceClient(base_url=mint_url) if mint_url else ServiceClient(dtype=dtype)
    except ValidationError as e:
        flag = lambda field: SFT_FLAGS.get(field, "--" + field.replace("_", "-"))
        fail("\n".join(f"{flag(str(p['loc'][0]))}: {p['msg']} (got {p.get('input')!r})" for p in e.errors()))
    except ValueError as e:
        fail(e)
    with _sft_progress() as (on_start, on_step):
        try:
            result = run_sft(config, service, resume=resume, on_start=on_start, on_step=on_step)
        except (DatasetError, ResumeError, ModelLoadError) as e:
            fail(e)
        except KeyboardInterrupt:
            err.print(f"[yellow]interrupted[/]; continue from the last checkpoint with: molt train sft ... --adapter {adapter} --resume")
            raise typer.Exit(130) from None
    if engine_url:
        from molt.engine.adapter_client import EngineAdapterError, EngineAdapters

        try:
            EngineAdapters(f"{engine_url.rstrip('/')}/v1", engine_kind).load(adapter, result.revision)
        except EngineAdapterError as e:
            fail(e, 1)
    record = _register_sft(config, result, db)
    if json_output:
        console.print_json(json.dumps({**dataclasses.asdict(result), "manifest": str(result.manifest), "record": record}))
        return
    before = "n/a" if result.eval_loss_before is None else f"{result.eval_loss_before:.4f}"
    after = "n/a" if result.eval_loss_after is None else f"{result.eval_loss_after:.4f}"
    console.print(f"adapter [bold]{adapter}[/]: {result.steps} steps, {result.tokens_per_s:.0f} tokens/s, eval loss {before} → {after}")
    console.print(f"revision {result.revision}" + (f", loaded into {engine_url}" if engine_url else ""))
    console.print(f"serve it: molt engine serve --lora {adapter}={result.revision}")
    if record:
        console.print(f"registered adapter revision {record}; put it into production with: molt registry promote {record}")


def _continued(start: str):
    """``molt train sft --init-from``: the revision path and the adapter it names (a label: the
    production pair's revision of that specialist)."""
    from molt.mint.checkpoints import revision_path

    if not start.startswith("molt://"):
        hcp = _trained_hcp(None)
        labels = [s.label for s in hcp.specialists]
        if start not in labels:
            fail(f"--init-from takes a molt:// revision path or a specialist's label ({', '.join(labels)}), not {start!r}")
        if not hcp.specialist(start).revision:
            fail(f"the production pair's {start} specialist has no trained revision to train on from")
        start = revision_path(hcp.specialist(start).revision)
    return start, _read_revision(start)


def _register_sft(config, result, db: Optional[str]) -> Optional[str]:
    """Register the run's dataset, job and adapter revision; None (with a warning) when the
    revision's files are not on this machine (a remote MinT server)."""
    from sqlalchemy.exc import SQLAlchemyError

    from molt.mint.checkpoints import CheckpointError
    from molt.registry import Registry
    from molt.registry.pairs import register_sft

    try:
        return register_sft(Registry(db), config, result, source=f"file:{Path(config.data).name}").id
    except (CheckpointError, FileNotFoundError) as e:
        err.print(f"[yellow]not registered[/]: the revision's files are not on this machine ({e})")
    except SQLAlchemyError as e:
        err.print(f"[yellow]not registered[/]: the registry database could not be written ({e})")
    return None


@train_app.command("demos")
def train_demos(
    out: Annotated[Path, typer.Option(help="Write the chat JSONL here.")],
    env: Annotated[str, typer.Option(help="Environment whose scenarios are demonstrated: living.")] = "living",
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds; each words every scenario anew.")] = "0,1,2",
    hcp: TrainedHcp = None,
) -> None:
    """The scripted oracle's sessions of an environment's train scenarios as chat JSONL for `molt
    train sft --data`: one row per session as the agent sees it (its prompt, the facts note of
    earlier sessions, the apps' tools). Demonstrations start a specialist on tasks whose RL
    rewards stay 0 until it can do some. The benchmark's test split is never written."""
    import json

    from molt.forge.living import oracle_transcripts
    from molt.home import write_atomic

    if env != "living":
        fail(f"no demonstrations for {env!r}: only the living environment has a scripted oracle")
    try:
        numbers = [int(seed) for seed in seeds.split(",")]
    except ValueError:
        fail(f"--seeds takes comma-separated integers, not {seeds!r}")
    rows = oracle_transcripts("train", numbers, _trained_hcp(hcp))
    write_atomic(out, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    err.print(f"{len(rows)} session(s) of the living train split, seeds {', '.join(map(str, numbers))}, written to {out}")


def _sft_progress():
    """A progress bar over optimizer steps: loss, eval loss and tokens/s as they come."""
    import contextlib

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("sft"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"), TextColumn("eval {task.fields[eval]}"),
        TextColumn("{task.fields[speed]} tok/s"), TimeElapsedColumn(), TimeRemainingColumn(), console=err,
    )
    task = progress.add_task("sft", total=None, loss="-", eval="-", speed="-")

    def on_start(total: int, first: int, n_train: int, n_eval: int) -> None:
        err.print(f"[dim]{n_train} training and {n_eval} held-out examples, {total} steps" + (f", resuming at step {first}" if first else "") + "[/]")
        progress.update(task, total=total, completed=first)
        progress.start()

    def on_step(report) -> None:
        progress.update(
            task, completed=report.step, loss=f"{report.loss:.4f}", speed=f"{report.tokens_per_s:.0f}",
            eval="-" if report.eval_loss is None else f"{report.eval_loss:.4f}",
        )

    @contextlib.contextmanager
    def running():
        try:
            yield on_start, on_step
        finally:
            progress.stop()

    return running()


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
    engine_float32_kv: Annotated[bool, typer.Option("--engine-float32-kv", help="Also run the engine with its default float32 KV cache (reported apart; ratios use the KV dtype of the baselines).")] = False,
    llama_cpp: Annotated[bool, typer.Option("--llama-cpp/--no-llama-cpp", help="Run llama.cpp's llama-server as a peer; the first run builds it from source (minutes), cached under $MOLT_HOME/llama.cpp.")] = True,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Decode throughput of the engine (base and 4 mixed adapters) against the raw forward loop,
    transformers generate, PEFT mixed-adapter generate and llama.cpp's server with the same
    adapters chosen per request, all with the same model and KV-cache dtype (llama.cpp also on
    the GGUF as shipped, reported apart); prefix-cache time to first token."""
    from molt.bench.serve import ServeBenchConfig, run

    sizes = tuple(int(b) for b in batch_sizes.split(","))
    config = ServeBenchConfig(model, sizes, prompt_tokens, new_tokens, rank, conversation_tokens, dtype, repeats, engine_float32_kv, llama_cpp)
    _bench(lambda out: run(config, out), json_output)


@bench_app.command("proxy")
def bench_proxy(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP to run; default: the one molt ships.")] = None,
    conversations: Annotated[int, typer.Option(min=1, help="Scripted 4-turn conversations per setting.")] = 4,
    think_seconds: Annotated[float, typer.Option(min=0, help="Seconds a simulated user reads before the next turn.")] = 1.0,
    max_tokens: Annotated[int, typer.Option(min=1, help="Answer length limit.")] = 64,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """User-visible turn latency through the proxy with summaries on and off, and the route and
    summary hops' share of a turn."""
    from molt.bench.proxy import ProxyBenchConfig, run

    _bench(lambda out: run(_hcp(hcp), ProxyBenchConfig(conversations, think_seconds, max_tokens), out), json_output)


@bench_app.command("replicas")
def bench_replicas(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP to run; default: the one molt ships (embedded model).")] = None,
    rounds: Annotated[int, typer.Option(min=1, help="Rounds of two concurrent 4-turn conversations per setting.")] = 8,
    max_tokens: Annotated[int, typer.Option(min=1, help="Answer length limit (short: the proxy's share shows).")] = 16,
    db: Annotated[Optional[str], typer.Option(help="PostgreSQL server URL (postgresql://user@host:port; a database per setting is created there); default: a throwaway local server.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Turn latency under the same load through one proxy, one --replicated proxy, and two
    --replicated proxies on one PostgreSQL database with each conversation staying on one or
    hopping between them: what committing before answering, and a turn through the other
    replica, cost."""
    from molt.bench.replicas import ReplicaBenchConfig, run

    _bench(lambda out: run(_hcp(hcp), ReplicaBenchConfig(rounds, max_tokens, db), out), json_output)


@bench_app.command("ray")
def bench_ray(
    model: Source = "embedded",
    steps: Annotated[int, typer.Option(min=1, help="Training steps per path (after one warm-up step).")] = 8,
    batch: Annotated[int, typer.Option(min=1, help="Datums per step.")] = 8,
    tokens: Annotated[int, typer.Option(min=2, help="Tokens per datum.")] = 128,
    ray: Annotated[str, typer.Option(help="The Ray cluster: an address, or 'local' to start one here.")] = "local",
    worker_cpus: Annotated[Optional[float], typer.Option(help="CPUs the Ray worker reserves (also its PyTorch threads); default: as many as this machine has.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """A training step in process, over the Tinker HTTP protocol, and over it with the run in a
    Ray worker (`molt mint serve --ray`): what Ray costs a step. Needs the scale extra."""
    import importlib.util

    from molt.bench.ray_step import RayStepConfig, run

    if importlib.util.find_spec("ray") is None:
        fail("this bench needs Ray: pip install 'molt[scale]'")
    _bench(lambda out: run(RayStepConfig(model, steps, batch, tokens, ray=ray, worker_cpus=worker_cpus), out), json_output)


@bench_app.command("living")
def bench_living(
    hcp: TrainedHcp = None,
    seed: Annotated[int, typer.Option(help="Varies the scenarios' wording (the same seed is the same run).")] = 0,
    split: Annotated[str, typer.Option(help="test (held out: the benchmark) or train (the RL environment's).")] = "test",
    system: Annotated[Optional[list[str]], typer.Option(help="Only this system (base, agent, routed, 'routed + memory'); repeatable; default all four.")] = None,
    limit: Annotated[Optional[int], typer.Option(min=1, help="Only the first N scenarios (a quick look).")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Scenarios run at a time (the engine batches them).")] = 8,
    max_tokens: Annotated[int, typer.Option(min=16, help="Answer length limit, the same for every system.")] = 96,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object: each system's figures and every scenario's scores.")] = False,
) -> None:
    """Living scenarios (calendar, contacts, shop, bank, messages; a scripted user; four kinds of
    noise; facts told in an earlier session): base vs agent specialist vs routed system vs routed
    system with per-user memory. Scored 0.7 x need (the world's end state) + 0.3 x process."""
    from molt.bench.living.bench import SYSTEMS, LivingBenchConfig, run
    from molt.bench.living.scenarios import SPLITS

    unknown = sorted(set(system or []) - set(SYSTEMS))
    if unknown or split not in SPLITS:
        fail(f"unknown system {', '.join(unknown)}; choose from {', '.join(SYSTEMS)}" if unknown else f"unknown split {split!r}; choose from {', '.join(SPLITS)}")
    config = LivingBenchConfig(seed, split, max_tokens, concurrency, limit, tuple(s for s in SYSTEMS if s in (system or SYSTEMS)))
    contract, _ = _trained(hcp)
    _bench(lambda out: run(contract, config, out), json_output)


@bench_app.command("memory")
def bench_memory(
    hcp: TrainedHcp = None,
    users: Annotated[int, typer.Option(min=1, help="Simulated users per seed; each states 4 facts over 2 conversations and asks about them in new ones.")] = 6,
    seeds: Annotated[str, typer.Option(help="Comma-separated seeds (which facts, values and traps each user gets); the table shows the spread.")] = "0",
    max_tokens: Annotated[int, typer.Option(min=8, help="Answer length limit.")] = 48,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Remembering users across conversations: no memory vs the full history in context vs molt's
    per-user memory. Accuracy (with stale-fact and other-person traps), prompt tokens and seconds
    per question."""
    from molt.bench.recall import MemoryBenchConfig, run

    config = MemoryBenchConfig(users, _seeds(seeds), max_tokens)
    contract, _ = _trained(hcp)
    _bench(lambda out: run(contract, config, out), json_output)


def _bench(run: Callable[[Console], dict], json_output: bool) -> dict:
    """Run a bench: tables and progress on stdout, or on stderr when stdout carries the JSON
    (``--json``); a ValueError (nothing to bench, a bad option) is a clear failure."""
    from molt.bench.report import print_json

    try:
        result = run(err if json_output else console)
    except ValueError as e:
        fail(e)
    if json_output:
        print_json(result)
    return result


def _seeds(text: str) -> tuple[int, ...]:
    try:
        seeds = tuple(int(s) for s in text.split(",") if s.strip())
    except ValueError:
        fail(f"--seeds takes comma-separated integers, not {text!r}")
    if not seeds:
        fail("--seeds needs at least one seed")
    return seeds


@bench_app.command("route")
def bench_route(
    hcp: TrainedHcp = None,
    per_label: Annotated[int, typer.Option(min=1, help="Held-out turns per label for accuracy, in each held-out set.")] = 150,
    conversations: Annotated[int, typer.Option(min=1, help="Conversations for the latency part.")] = 3,
    turns: Annotated[int, typer.Option(min=2, help="Turns per conversation; each changes specialist.")] = 8,
    think_seconds: Annotated[float, typer.Option(min=0, help="Seconds a simulated user reads before the next turn.")] = 2.0,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object (accuracy, per_class, outside, route_share, summary_share, ...).")] = False,
) -> None:
    """Held-out routing accuracy (overall, per class, confusion) on the families' held-out turns
    and on the outside-style domain/style-held-out turns, and the route and summary hops' share
    of the median user-visible turn latency."""
    from molt.bench.route import RouteBenchConfig, run

    _bench(lambda out: run(_trained_hcp(hcp), RouteBenchConfig(per_label, conversations, turns, think_seconds), out), json_output)


@bench_app.command("specialists")
def bench_specialists(
    hcp: TrainedHcp = None,
    per_family: Annotated[int, typer.Option(min=1, help="Cases per family and split.")] = 30,
    split: Annotated[Optional[list[str]], typer.Option(help="heldout (things never trained on) and/or wording (trained things, new wording); default both.")] = None,
    family: Annotated[Optional[list[str]], typer.Option(help="Only this family (chat, agent, coding, genui); repeatable; default every trained one.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Base vs each specialist vs the routed system (model=molt) on each family's held-out splits."""
    from molt.bench.report import print_json
    from molt.bench.specialists import SpecialistsBenchConfig, run
    from molt.families import SPLITS

    unknown = sorted(set(split or []) - set(SPLITS[1:]))
    if unknown:
        fail(f"unknown split {', '.join(unknown)}; choose from {', '.join(SPLITS[1:])}")
    try:
        config = SpecialistsBenchConfig(per_family, splits=tuple(split or SPLITS[1:]), families=tuple(family or ()))
        contract, pair = _trained(hcp)
        result = run(contract, config, err if json_output else console)
    except ValueError as e:
        fail(e)
    if pair is not None:
        from molt.registry.pairs import register_evaluation

        evaluation = register_evaluation(_registry(None), pair, result)
        result["evaluation"] = evaluation.id
        err.print(f"registered {evaluation.id} of pair {pair}: {evaluation.attributes['verdict']}")
    if json_output:
        print_json(result)


@bench_app.command("genui")
def bench_genui(
    hcp: TrainedHcp = None,
    cases: Annotated[int, typer.Option(min=9, help="Held-out requests, the nine kinds in turn (forms, pickers, checklists, cards, confirmations, tables, charts, wizards, edits).")] = 63,
    seed: Annotated[int, typer.Option(help="Seed of the held-out draw.")] = 0,
    browser: Annotated[bool, typer.Option(help="Draw and use each valid surface in Chromium (the renders and interactions columns).")] = True,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure and each case's outcome.")] = False,
) -> None:
    """Base vs genui specialist vs routed system on held-out UI requests: valid on first try, valid
    after repair, renders in Chromium without console errors, interactions work, constraints met."""
    from molt.bench.genui import GenuiBenchConfig, run

    _bench(lambda out: run(_trained_hcp(hcp), GenuiBenchConfig(cases, seed, browser=browser), out), json_output)


@bench_app.command("substrate")
def bench_substrate(
    hcp: TrainedHcp = None,
    tasks: Annotated[int, typer.Option(min=4, help="Multi-step business tasks, the four task kinds in turn.")] = 48,
    split: Annotated[str, typer.Option(help="heldout (a world, functions and task kinds never trained on), wording, or train.")] = "heldout",
    seed: Annotated[int, typer.Option(help="Seed of the task draw.")] = 0,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure and each task's outcome.")] = False,
) -> None:
    """Function calling vs the REPL substrate on multi-step business tasks with exact answers, for
    the base and the agent specialist, all through the proxy's harness: accuracy, model calls and
    tokens per task, and the REPL's ratio to function calling."""
    from molt.bench.substrate import SubstrateBenchConfig, run

    if split not in ("heldout", "wording", "train"):
        fail(f"--split is heldout, wording or train, not {split!r}")
    _bench(lambda out: run(_trained_hcp(hcp), SubstrateBenchConfig(tasks, seed, split), out), json_output)


@bench_app.command("train")
def bench_train(
    model: Source = "embedded",
    examples: Annotated[int, typer.Option(min=8, help="Chats in the training set (~150 tokens each).")] = 64,
    rank: Annotated[int, typer.Option(min=1, help="LoRA rank on every attention and MLP projection.")] = 16,
    batch_size: Annotated[int, typer.Option(min=1, help="Examples per optimizer step.")] = 8,
    max_length: Annotated[int, typer.Option(min=16, help="Sequence length limit.")] = 512,
    dtype: Annotated[str, typer.Option(help="auto (bf16 where native), float32 or bfloat16, for both sides.")] = "auto",
    trl_packing: Annotated[bool, typer.Option("--trl-packing", help="Turn on TRL's packing (slower on CPU).")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """SFT tokens/s and peak memory of molt against TRL SFTTrainer + PEFT on the same data, model,
    rank and lengths, each side in its own process."""
    from molt.bench.train import TrainBenchConfig, run

    _run_bench(run, TrainBenchConfig(model, examples, rank, batch_size, max_length, dtype, trl_packing), json_output)


@bench_app.command("longstraw")
def bench_longstraw(
    model: Source = "embedded",
    groups: Annotated[str, typer.Option(help="Group sizes (completions sharing the prompt), comma-separated.")] = "1,2,4,8",
    lengths: Annotated[str, typer.Option(help="Prompt lengths in tokens, comma-separated (capped at the model's positions minus the response).")] = "1024,2048,4096,8192",
    response: Annotated[int, typer.Option(min=1, help="Tokens of each response.")] = 128,
    rank: Annotated[int, typer.Option(min=1, help="LoRA rank on every attention and MLP projection.")] = 16,
    dtype: Annotated[str, typer.Option(help="auto (bf16 where native), float32 or bfloat16.")] = "auto",
    checkpoint_from: Annotated[int, typer.Option(min=1, help="Both paths checkpoint layers in a forward with more tokens than this; 1: always (the plain path's best memory setting).")] = 1,
    memory_gb: Annotated[float, typer.Option(help="Memory budget: points predicted over it are skipped; the longest prompt is extrapolated to it.")] = 24.0,
    max_step_s: Annotated[float, typer.Option(help="Skip points whose step is predicted to take longer.")] = 120.0,
    gradient_length: Annotated[int, typer.Option(min=2, help="Prompt length of the gradient comparison (float32).")] = 1024,
    seed: Annotated[int, typer.Option(help="Seed of the random prompt and responses.")] = 0,
    plot: Annotated[Optional[Path], typer.Option(help="Write a PNG of peak memory and step time against group size.")] = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """Peak memory and seconds of one RL step on a group sharing a long prompt, plain packed path
    vs LongStraw (prompt once without autograd, one response at a time), over group sizes and
    prompt lengths, each point in a fresh process; and LongStraw's gradient against plain backprop
    with the prompt detached and against full backprop."""
    from molt.bench.longstraw import LongStrawBenchConfig, run

    config = LongStrawBenchConfig(model, _integers(groups, "--groups"), _integers(lengths, "--lengths"), response, rank, dtype, checkpoint_from, memory_gb, max_step_s, gradient_length, 4, seed, str(plot) if plot else None)
    _bench(lambda out: run(config, out), json_output)


def _integers(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        fail(f"{option} takes comma-separated whole numbers, not {text!r}")
    if not values or min(values) < 1:
        fail(f"{option} takes positive numbers, not {text!r}")
    return values


@bench_app.command("rl")
def bench_rl(
    model: Source = "embedded",
    env: Annotated[str, typer.Option(help="Single-turn environment: tool_calls, unit_tests or surfaces.")] = "tool_calls",
    steps: Annotated[int, typer.Option(min=1, help="Timed optimizer steps (after --warmup-steps untimed ones).")] = 3,
    warmup_steps: Annotated[int, typer.Option(min=0, help="Steps run before the clock starts, on both sides.")] = 1,
    batch: Annotated[int, typer.Option(min=1, help="Problems per step.")] = 4,
    group_size: Annotated[int, typer.Option(min=2, help="Completions per problem.")] = 4,
    rank: Annotated[int, typer.Option(min=1, help="LoRA rank on every attention and MLP projection.")] = 16,
    lr: Annotated[float, typer.Option(help="Constant Adam learning rate.")] = 1e-4,
    dtype: Annotated[str, typer.Option(help="auto (bf16 where native), float32 or bfloat16, for both sides.")] = "auto",
    seed: Annotated[int, typer.Option(help="Seed of the problems and the sampling.")] = 0,
    trl_generation: Annotated[str, typer.Option(help="How TRL samples: generate (padded batch) or continuous_batching.")] = "generate",
    start: Annotated[str, typer.Option(help="Where both policies start: 'specialist' (production's revision for the env's specialist: rewards vary, so groups train), 'fresh' or a molt:// revision.")] = "specialist",
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object with every figure.")] = False,
) -> None:
    """One GRPO workload (problems, group size, batch, LoRA rank, steps) run by molt (engine +
    MinT) and by TRL GRPOTrainer + PEFT, each in its own process: seconds per step, rollout and
    training tokens/s, reward, peak memory, and the ratios."""
    from molt.bench.rl import RLBenchConfig, run
    from molt.forge.catalog import ENVS

    if env not in ENVS:
        fail(f"unknown environment {env!r}; molt has: {', '.join(ENVS)}")
    start_path, rank = _rl_start(start, _trained_hcp(None) if start == "specialist" else None, ENVS[env].label, rank)
    _run_bench(run, RLBenchConfig(model, env, steps, warmup_steps, batch, group_size, rank, lr, 1.0, dtype, seed, trl_generation, start_path), json_output)


def _run_bench(run, config, json_output: bool) -> None:
    """A side-by-side bench: tables on the terminal, or one JSON object; a failed side is one clear error."""
    from molt.bench.report import print_json

    try:
        result = run(config, err if json_output else console)
    except (ValueError, RuntimeError) as e:
        fail(e)
    if json_output:
        print_json(result)


@app.command("rl")
def rl(
    env: Annotated[str, typer.Option(help="Environment: tool_calls (agent), order_refund (agent, multi-turn), unit_tests (coding) or surfaces (genui).")] = "tool_calls",
    adapter: Annotated[str, typer.Option(help="Name the engine serves the policy under; every step hot-loads its new revision.")] = "agent-rl",
    model: Source = "embedded",
    steps: Annotated[int, typer.Option(min=1, help="Optimizer steps.")] = 20,
    group_size: Annotated[int, typer.Option(min=2, help="Answers sampled per problem (GRPO group).")] = 4,
    batch: Annotated[int, typer.Option(min=1, help="Problems per step.")] = 4,
    oversample: Annotated[int, typer.Option(min=1, help="Sample batch × this many problems a step; train the first --batch groups whose rewards differ (dynamic sampling).")] = 1,
    lr: Annotated[float, typer.Option(help="Adam learning rate.")] = 1e-4,
    loss: Annotated[str, typer.Option(help="MinT RL loss: importance_sampling, ppo, cispo or dro.")] = "importance_sampling",
    tis_cap: Annotated[float, typer.Option(help="Truncated importance sampling cap (importance_sampling only); 0: off.")] = 0.0,
    icepop_beta: Annotated[float, typer.Option(help="IcePop: mask tokens whose learner/sampler ratio leaves [1/β, β]; 0: off.")] = 0.0,
    normalize: Annotated[bool, typer.Option("--normalize", help="Divide advantages by the group's standard deviation.")] = False,
    temperature: Annotated[float, typer.Option(help="Sampling temperature of the rollouts.")] = 1.0,
    rank: Annotated[int, typer.Option(min=1, help="LoRA rank of the policy.")] = 16,
    train_size: Annotated[int, typer.Option(min=1, help="Training problems generated from the family's --train-split.")] = 200,
    train_split: Annotated[Optional[str], typer.Option(help="Family split the problems are drawn from: train (what the specialist was fine-tuned on) or wording (the same things in new words); default: the environment's (tool_calls: wording, others: train). Held-out problems are always the heldout split.")] = None,
    heldout_size: Annotated[int, typer.Option(min=1, help="Held-out problems (never sampled in training), scored greedily.")] = 30,
    eval_every: Annotated[int, typer.Option(min=1, help="Steps between held-out evaluations.")] = 5,
    checkpoint_every: Annotated[int, typer.Option(min=1, help="Steps between checkpoints (for --resume).")] = 5,
    seed: Annotated[int, typer.Option(help="Seed of the data order and the sampling.")] = 0,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the run in --out from its last checkpoint, with the same data order.")] = False,
    out: Annotated[Optional[Path], typer.Option(help="Run folder; default $MOLT_HOME/rl/<env>-<adapter>.")] = None,
    engine_url: Annotated[Optional[str], typer.Option(help="Sample from this OpenAI-compatible server (with runtime LoRA loading) instead of an engine started here.")] = None,
    mint_url: Annotated[Optional[str], typer.Option(help="Train on a `molt mint serve` server instead of in this process.")] = None,
    start: Annotated[str, typer.Option(help="Where the policy starts: 'specialist' (the served specialist's revision, from the registry's production pair), 'fresh' (a new LoRA on the base) or a molt:// revision path.")] = "specialist",
    hcp: Annotated[Optional[Path], typer.Option(help="HCP whose prompts (and, with --start specialist, whose revision) the run uses; default: production's.")] = None,
    routing_replay: Annotated[Optional[bool], typer.Option("--routing-replay/--no-routing-replay", help="R3: the engine records each token's routing (MoE experts, sparse-attention positions) and the learner replays it; default: on for bases that route.")] = None,
    eval_only: Annotated[bool, typer.Option("--eval-only", help="Train nothing: score the --start revision greedily on the held-out problems (with the family's own figures) and stop.")] = False,
) -> None:
    """RL for one specialist (GRPO-style): sample groups through the engine, reward them in the
    environment, train through MinT, hot-load each revision. Writes metrics.jsonl, curves.png and
    summary.json to the run folder."""
    from molt.forge.catalog import ENVS
    from molt.forge.loop import RLConfig, run_rl
    from molt.forge.session import rl_run
    from molt.mint.losses import LossInputError, resolve_loss

    loss_config = {k: v for k, v in {"tis_cap": tis_cap, "icepop_beta": icepop_beta}.items() if v}
    try:
        resolve_loss(loss, loss_config)
    except LossInputError as e:
        fail(e)
    if env not in ENVS:
        fail(f"unknown environment {env!r}; molt has: {', '.join(ENVS)}")
    if train_split not in (None, "train", "wording"):
        fail(f"--train-split must be train or wording, not {train_split!r} (the heldout split is never trained on)")
    contract = _trained_hcp(hcp) if start == "specialist" else _hcp(hcp)
    start_path, rank = _rl_start(start, contract, ENVS[env].label, rank)

    from molt.models.loader import has_routing

    try:
        routed = has_routing(model)
    except ModelLoadError as e:
        fail(e)
    if routing_replay and not routed:
        fail(f"--routing-replay needs a sparse-MoE or sparse-attention base; {model!r} routes nothing")
    config = RLConfig(
        adapter=adapter, steps=steps, batch=batch, oversample=oversample, group_size=group_size, lr=lr, loss=loss, loss_config=loss_config, normalize=normalize,
        temperature=temperature, max_tokens=ENVS[env].max_tokens, eval_every=eval_every, checkpoint_every=checkpoint_every, seed=seed,
        routing_replay=routed if routing_replay is None else routing_replay,
    )  # fmt: skip
    if eval_only:
        with rl_run(config, env, contract, model, rank, 1, heldout_size, engine_url, mint_url, start=start_path) as run:
            _rl_heldout_table(env, start_path, run)
        return
    with _rl_progress(steps) as on_step, rl_run(config, env, contract, model, rank, train_size, heldout_size, engine_url, mint_url, folder=out, start=start_path, train_split=train_split) as run:
        run.on_step = on_step
        err.print(f"[dim]{env} ({ENVS[env].about}): {len(run.train.problems())} training problems ({train_split or ENVS[env].train_split} split), {len(run.heldout)} held out; from {start_path or 'a fresh LoRA'}; run folder {run.folder}[/]")
        summary = run_rl(run, resume=resume)
    table = Table("", "value", title=f"molt rl --env {env}")
    for key, value in summary.items():
        table.add_row(key, "-" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value))
    table.add_row("curves", str(run.folder / "curves.png"))
    console.print(table)


def _rl_start(start: str, contract, label: str, rank: int) -> tuple[str | None, int]:
    """Where an RL policy starts (a molt:// revision, or None for a fresh LoRA) and its rank: a
    revision's own. ``start``: 'specialist' (the HCP's revision for ``label``), 'fresh' or a path."""
    from molt.mint.checkpoints import revision_path

    if start == "fresh":
        return None, rank
    if start == "specialist":
        revision = contract.specialist(label).revision
        if not revision:
            fail(f"the HCP's {label} specialist has no trained revision; bootstrap it, or pass --start fresh")
        start = revision_path(revision)
    return start, _read_revision(start).r


def _read_revision(path: str):
    """The adapter at a ``molt://`` revision path; a clear error when there is none."""
    from molt.lora.format import AdapterError, read_adapter
    from molt.mint.checkpoints import CheckpointError, resolve

    try:
        return read_adapter(resolve(path))
    except (AdapterError, CheckpointError) as e:
        fail(e)


def _rl_heldout_table(env: str, start: str | None, run) -> None:
    """``molt rl --eval-only``: the held-out reward of the start revision, and the family's own
    aggregates (e.g. the agent's exact-call and no-call figures) when the environment has one."""
    from molt.forge.loop import greedy_answers, publish
    from molt.mint.checkpoints import resolve

    if start is None:
        publish(run, 0)  # a fresh LoRA: save it once so the engine can load it
    else:
        run.sampler.load_adapter(run.config.adapter, resolve(start))
    with err.status(f"answering {len(run.heldout)} held-out problems greedily, one at a time"):
        answers = greedy_answers(run, run.heldout)
    table = Table("", "value", title=f"molt rl --env {env} --eval-only: {start or 'a fresh LoRA'}")
    table.add_row("held-out reward", f"{sum(a.reward for a in answers) / len(answers):.3f}")
    family = getattr(run.train, "family", None)
    if family is not None:
        for key, value in family.summarise([a.metrics for a in answers]).items():
            table.add_row(key, f"{value:.3f}" if key != "n" else str(int(value)))
    console.print(table)


def _rl_progress(steps: int):
    """A progress bar over RL steps: sampled reward, groups kept, held-out reward when measured."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    progress = Progress(
        TextColumn("rl"), BarColumn(), MofNCompleteColumn(), TextColumn("reward {task.fields[reward]}"), TextColumn("kept {task.fields[kept]}"),
        TextColumn("held-out {task.fields[heldout]}"), TimeElapsedColumn(), TimeRemainingColumn(), console=err,
    )  # fmt: skip
    task = progress.add_task("rl", total=steps, reward="-", kept="-", heldout="-")

    def on_step(metrics: dict) -> None:
        fields = dict(reward=f"{metrics['reward_mean']:.3f}", kept=f"{metrics['groups_kept']}/{metrics['groups']}")
        if "heldout_reward" in metrics:
            fields["heldout"] = f"{metrics['heldout_reward']:.3f}"
        progress.update(task, completed=metrics["step"] + 1, **fields)
        if not err.is_terminal:  # piped: a line per step instead of a redrawn bar
            err.print(f"step {metrics['step'] + 1}/{steps}: reward {fields['reward']}, groups kept {fields['kept']}, held-out {fields.get('heldout', '-')}")

    @contextlib.contextmanager
    def running():
        progress.start()
        try:
            yield on_step
        finally:
            progress.stop()

    return running()


def _hcp(path: Optional[Path]):
    from molt.hcp import HCPError, load_hcp

    try:
        return load_hcp(path)
    except HCPError as e:
        fail(e)


HcpFile = Annotated[Optional[Path], typer.Argument(help="An HCP TOML file; omit for the one molt ships.")]


def _trained_hcp(path: Optional[Path]):
    """``path``, else the registry's production pair, else the bootstrapped default HCP; an error
    when there is none yet."""
    return _trained(path)[0]


def _trained(path: Optional[Path]):
    """(HCP, the pair it is when it comes from the registry, else None)."""
    from molt.hcp import load_hcp
    from molt.registry.pairs import PRODUCTION
    from molt.specialists.bootstrap import bootstrapped_path

    if path is not None:
        return _hcp(path), None
    registry = _registry(None)
    production = registry.resolve_alias(PRODUCTION)
    if production is not None:
        return _pair_hcp(registry, production[0]), production[0]
    trained = bootstrapped_path(load_hcp())
    if not trained.is_file():
        fail("no trained specialists yet: run `molt specialists bootstrap` (or `molt up`), or pass --hcp")
    return _hcp(trained), None


def _run_bootstrap(contract, labels):
    from molt.specialists.bootstrap import bootstrap

    with _bootstrap_progress() as progress:
        return bootstrap(contract, labels, progress=progress)


def _bootstrap_progress():
    """One progress bar per specialist (optimizer steps, loss), then the router's figures."""
    import contextlib

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from molt.specialists.bootstrap import Progress as Callbacks

    bars = Progress(TextColumn("{task.description:>8}"), BarColumn(), MofNCompleteColumn(), TextColumn("loss {task.fields[loss]}"), TimeElapsedColumn(), console=err)
    tasks: dict[str, int] = {}

    def on_specialist(label: str, steps: int) -> None:
        if not bars.console.is_terminal:  # no live bars in a log: a line per specialist instead
            bars.console.print(f"  training {label}: {steps} steps")
        tasks[label] = bars.add_task(label, total=steps, loss="-")

    def on_step(label: str, step: int, loss: float) -> None:
        bars.update(tasks[label], completed=step, loss=f"{loss:.3f}")

    def on_router(info: dict) -> None:
        heldout = info.get("heldout")
        figures = f", held-out accuracy {heldout['accuracy']:.1%} over {heldout['n']} requests" if heldout else ""
        bars.console.print(f"  router: {info['train_requests']} training requests{figures} ({info['seconds']} s)")

    @contextlib.contextmanager
    def running():
        bars.start()
        try:
            yield Callbacks(on_specialist=on_specialist, on_step=on_step, on_router=on_router)
        finally:
            bars.stop()

    return running()


@specialists_app.command("bootstrap")
def specialists_bootstrap(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP whose specialists to train; default: the one molt ships.")] = None,
    only: Annotated[Optional[str], typer.Option(help="Comma-separated labels to train (others keep their adapters).")] = None,
    force: Annotated[bool, typer.Option(help="Train again even if a bootstrapped HCP exists (adapters already trained with the same recipe and data are kept).")] = False,
) -> None:
    """Generate each specialist's training data, fine-tune its adapter with MinT SFT, train the
    router, and write the HCP that serves them to $MOLT_HOME/specialists/<name>.toml."""
    from molt.families import FAMILIES
    from molt.specialists.bootstrap import bootstrapped_path

    contract = _hcp(hcp)
    path = bootstrapped_path(contract)
    if path.is_file() and not force:
        console.print(f"already bootstrapped: {path} (pass --force to train again)")
        return
    labels = only.split(",") if only else None
    if labels and path.is_file():
        contract = _hcp(path)  # retrain some: the others keep the adapters they were bootstrapped with
    unknown = sorted(set(labels or []) - {s.label for s in contract.specialists})
    if unknown:
        fail(f"--only names {', '.join(unknown)}, not labels of this HCP")
    done = _run_bootstrap(contract, labels)
    for specialist in done.hcp.specialists:
        why = "not trained (--only)" if specialist.label in FAMILIES else "no data family"
        console.print(f"{specialist.label:>8}: {specialist.revision or f'base ({why})'}")
    console.print(f"registered pair {done.pair.id} as {done.alias}; HCP written to {done.path}")
    if done.alias == "production":
        console.print("serve it with `molt up`")
    else:
        console.print(f"`molt up` serves production; to serve this pair: molt registry promote {done.pair.id}")


@router_app.command("train")
def router_train(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP whose labels the router learns; default: the one molt ships.")] = None,
    traffic: Annotated[Optional[list[Path]], typer.Option(help='Logged traffic to learn from too: JSONL of {"text", "label"} (optionally "tools", "messages"); repeatable.')] = None,
    layer: Annotated[int, typer.Option(min=1, help="Base layer whose pooled hidden state are the features.")] = 16,
    out: Annotated[Optional[Path], typer.Option(help="Folder to write; default: $MOLT_HOME/routers/<hcp name>.")] = None,
) -> None:
    """Fit the classifier router on the data families' turns, the outside-style corpus, the HCP's
    examples and traffic, and report its accuracy on both held-out sets (the families', and the
    corpus's domain/style-held-out split)."""
    from molt.home import molt_home, replace_folder
    from molt.router.training import RouterRecipe, RoutingSet, read_traffic, train_from_families
    from molt.specialists.bootstrap import router_folder

    contract = _hcp(hcp)
    labels = [s.label for s in contract.specialists]
    logged = RoutingSet()
    try:
        for path in traffic or []:
            logged = logged + read_traffic(path, labels)
        router = train_from_families(contract, recipe=RouterRecipe(layer=layer), traffic=logged)
    except (OSError, ValueError) as e:
        fail(e)
    folder = replace_folder(out or molt_home() / router_folder(contract), router.save)
    for name, title in (("heldout", "held-out accuracy"), ("outside", "outside-style held-out accuracy")):
        report = router.info.get(name)
        if report:
            per_class = ", ".join(f"{k} {v:.1%}" for k, v in report["per_class"].items())
            console.print(f"{title} {report['accuracy']:.1%} over {report['n']} turns ({per_class})")
    console.print(f"router written to {folder}; select it in an HCP with [router] kind = \"classifier\", classifier = \"{folder}\"", soft_wrap=True)


@router_app.command("eval")
def router_eval(
    hcp: TrainedHcp = None,
    per_label: Annotated[int, typer.Option(min=1, help="Held-out turns per label, in each held-out set.")] = 150,
    json_output: Annotated[bool, typer.Option("--json", help="Print one JSON object (the families' figures; the outside-style set's under \"outside\").")] = False,
) -> None:
    """Route the data families' held-out turns and the outside-style corpus's domain/style-held-out
    turns with the HCP's router (guardrails included): accuracy, per-class accuracy and the
    confusion matrix of each."""
    from molt.bench.report import print_json
    from molt.bench.route import evaluate_router

    try:
        report = evaluate_router(_trained_hcp(hcp), per_label, console=err if json_output else console)
    except ValueError as e:
        fail(e)
    if json_output:
        print_json(report)


@proxy_app.command("serve")
def proxy_serve(
    hcp: Annotated[Optional[Path], typer.Option(help="The HCP file to run; default: the one molt ships.")] = None,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8000,
    max_request_kb: Annotated[int, typer.Option(min=1, help="Refuse larger request bodies (413), counted on the bytes received.")] = PROXY_LIMITS.max_request_bytes // 1024,
    max_in_flight: Annotated[int, typer.Option(min=1, help="Turns answered at once.")] = PROXY_LIMITS.max_in_flight,
    max_queued: Annotated[int, typer.Option(min=0, help="Turns waiting for a slot; beyond this, 429 with Retry-After.")] = PROXY_LIMITS.max_queued,
    max_per_client: Annotated[int, typer.Option(min=1, help="Turns one client (bearer token, else address) may have running or waiting; beyond this, 429 for that client.")] = PROXY_LIMITS.max_per_client,
    log_routes: Annotated[Optional[Path], typer.Option(help='Append each routed user turn to this JSONL ({"text", "label", "kind"}, plus "tools" and recent "messages" when the turn has them); it holds user text, so it is off unless asked for. Correct the labels, then `molt router train --traffic FILE`.')] = None,
    replicated: Annotated[bool, typer.Option(help="One of several proxies on one database (--db, PostgreSQL): a turn is answered once its conversation is committed, so the next turn may go to any replica, and a replica continuing a conversation waits for the summaries another is writing.")] = False,
    db: DbOption = None,
) -> None:
    """Route each user turn to one specialist on the HCP's engine and answer over the OpenAI chat API.
    Replicas: start several with --replicated on one PostgreSQL --db behind any load balancer."""
    from sqlalchemy.exc import SQLAlchemyError

    from molt.http_server import serve
    from molt.proxy.server import create_app

    contract = _hcp(hcp)
    try:
        app = create_app(contract, Limits(max_request_kb * 1024, max_in_flight, max_queued, max_per_client), route_log=log_routes, db=db, replicated=replicated)
    except (ValueError, SQLAlchemyError) as e:
        fail(e)
    labels = ", ".join(s.label for s in contract.specialists)
    auth = f"bearer token from ${contract.environment.api_key_env}" if contract.environment.api_key_env else "no auth"
    err.print(f"molt proxy: http://{host}:{port}/v1 (model 'molt' routes over {labels}; engine {contract.model.engine_url}; {auth})")
    serve(app, host, port)


@hcp_app.command("validate")
def hcp_validate(path: Annotated[Path, typer.Argument(help="The HCP TOML file to check.")]) -> None:
    """Check an HCP file against its version's schema; exit 2 with every problem otherwise."""
    hcp = _hcp(path)
    labels = ", ".join(s.label for s in hcp.specialists)
    console.print(f"{path}: valid HCP v{hcp.hcp_version} '{hcp.name}' ({len(hcp.specialists)} specialists: {labels}; router {hcp.router.kind})", soft_wrap=True)


@hcp_app.command("show")
def hcp_show(path: HcpFile = None) -> None:
    """Print an HCP with every default filled in, as TOML."""
    from molt.hcp import to_toml

    print(to_toml(_hcp(path)), end="")


@hcp_app.command("diff")
def hcp_diff(
    old: Annotated[Path, typer.Argument(help="The HCP before.")],
    new: Annotated[Path, typer.Argument(help="The HCP after.")],
) -> None:
    """What changes between two HCP files, field by field (specialists matched by label)."""
    from molt.hcp import diff_hcp

    lines = diff_hcp(_hcp(old), _hcp(new))
    for line in lines or ["no differences"]:
        console.print(line, markup=False, highlight=False, soft_wrap=True)




def _use_db(db: Optional[str]) -> None:
    """``--db`` for a command whose parts (registry, proxy state, background training) each open the database."""
    from molt.registry.database import DB_ENV

    if db:
        os.environ[DB_ENV] = db


def _registry(db: Optional[str]):
    from sqlalchemy.exc import SQLAlchemyError

    from molt.registry import Registry

    try:
        return Registry(db)
    except (SQLAlchemyError, ValueError) as e:
        fail(f"cannot open the registry database: {e}")


@contextlib.contextmanager
def _registry_errors():
    """A reference that names nothing, a bad HCP record…: one clear line, no traceback."""
    from molt.hcp import HCPError
    from molt.registry import RegistryError

    try:
        yield
    except (RegistryError, HCPError) as e:
        fail(e)


def _pair_hcp(registry, ref: str):
    from molt.registry.pairs import pair_hcp

    with _registry_errors():
        return pair_hcp(registry, ref)


def _actor(actor: Optional[str]) -> str:
    import getpass

    return actor or getpass.getuser()


def _record(registry, ref: str):

    with _registry_errors():
        return registry.get(ref)


@app.command("evolve")
def evolve(
    target: Annotated[str, typer.Option(help="The specialist to improve: agent, chat, coding or genui.")] = "agent",
    generations: Annotated[int, typer.Option(min=1, help="Generations to run; an unfinished one resumes first.")] = 1,
    contract: Annotated[Optional[Path], typer.Option(help="The external contract (TOML); default: molt's, molt/evolve/contract.toml.")] = None,
    show_contract: Annotated[bool, typer.Option("--show-contract", help="Print the contract's suites with their case hashes and stop.")] = False,
    bank: Annotated[int, typer.Option(min=4, help="Train-split problems per generation (discovery, expansion, update).")] = 48,
    search: Annotated[int, typer.Option(min=4, help="Wording-split problems that judge HCP edits.")] = 40,
    variants: Annotated[int, typer.Option(min=1, max=7, help="Discovery variants proposed per bank problem, each by a different operator: a renamed schema (the offered functions under other names) and an unoffered request (one no function serves, to refuse by name) first, then at random distractor tools, an earlier goal, a restated request, a lifted constraint, a hidden preference.")] = 2,
    k: Annotated[int, typer.Option(min=1, help="Samples per problem.")] = 4,
    learning_rate: Annotated[float, typer.Option(help="SFT learning rate of the update.")] = 1e-3,
    epochs: Annotated[int, typer.Option(min=1, help="SFT passes over the update's dataset.")] = 1,
    update: Annotated[str, typer.Option(help="How the update trains: 'sft' (the collected passing answers, variant references, rehearsal and rated turns; measured faster and better on the agent) or 'rl' (`molt rl` on the target's environment, --rl-steps steps; agent, coding and genui).")] = "sft",
    rl_steps: Annotated[int, typer.Option(min=1, help="RL steps of an rl update.")] = 24,
    rl_lr: Annotated[float, typer.Option(help="Adam learning rate of an rl update.")] = 3e-4,
    seed: Annotated[int, typer.Option(help="Seed of the problem draws and the training order.")] = 0,
    mint_url: Annotated[Optional[str], typer.Option(help="Train the update on this `molt mint serve` server (Tinker protocol; network faults are retried, steps applied once) instead of in this process; it must share $MOLT_HOME.")] = None,
    db: DbOption = None,
) -> None:
    """Improve a specialist, generation by generation: discovery (harder variants of the problem
    bank), expansion (failures attributed, HCP edits searched), update (`molt rl` from the current
    revision through MinT, or SFT on passing trajectories and rated experience) and gate (the contract's
    held-out suites, paired bootstrap; promote to production or reject, evidence in the registry).
    Each generation resumes from its last finished phase when stopped."""
    from molt.evolve.contract import ContractError, cases_hash, load_contract, suite_cases
    from molt.evolve.generation import EvolveConfig, evolve_root, next_generation, read_state, run_generation
    from molt.evolve.plot import draw
    from molt.registry import RegistryError

    try:
        judge = load_contract(contract)
        if show_contract:
            table = Table("specialist", "family", "split", "cases", "metric", "min gain", "max drop", "sha256", title=f"contract {judge.name} (version {judge.contract_version})")
            for suite in judge.suites:
                digest = cases_hash(suite_cases(suite))
                table.add_row(suite.specialist, suite.family_name, suite.split, str(suite.cases), suite.metric, f"{suite.min_gain:g}", f"{suite.max_drop:g}", f"{digest[:12]} {'pinned' if suite.sha256 else 'unpinned'}")
            console.print(table)
            console.print(f"test: {judge.test.method} at {judge.test.confidence:.0%}, {judge.test.resamples} resamples; routing: {judge.routing.cases} cases per suite, max drop {judge.routing.max_drop:g}; latency: at most ×{1 + judge.latency.max_increase:g}")
            return
        judge.suite(target)
    except ContractError as e:
        fail(e)
    registry = _registry(db)
    if update not in ("sft", "rl"):
        fail(f"--update must be sft or rl, not {update!r}")
    config = EvolveConfig(
        target=target, bank=bank, search=search, variants_per_case=variants, k=k, update=update, learning_rate=learning_rate, epochs=epochs, rl_steps=rl_steps, rl_lr=rl_lr,
        seed=seed, experience_db=db, mint_url=mint_url,
    )
    states = []
    for _ in range(generations):
        number = next_generation(target)
        with _evolve_progress(number) as reporter:
            try:
                state = run_generation(registry, judge, config, number, reporter)
            except (ContractError, RegistryError, ValueError) as e:
                fail(e)
        states.append(state)
        _generation_table(state)
    root = evolve_root(target)
    every = [s for p in sorted(root.glob("gen-*")) if (s := read_state(p)) and "gate" in s["phases"] and s["contract"] == judge.digest]
    plot = draw(every, root / "generations.png", f"molt evolve --target {target}: held-out figures under contract {judge.name}")
    console.print(f"plot: {plot}; lineage: molt registry lineage production")


@contextlib.contextmanager
def _evolve_progress(number: int):
    """A bar per phase pass; piped, a line per pass and per tenth of it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from molt.evolve.generation import Reporter

    progress = Progress(TextColumn(f"gen {number}"), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err)
    current: dict = {}

    def start(name: str, total: int) -> None:
        if "task" in current:
            progress.update(current["task"], completed=progress.tasks[current["task"]].total)
        current.update(task=progress.add_task(name, total=max(1, total)), name=name, total=max(1, total), done=0)
        if not err.is_terminal:
            err.print(f"gen {number}: {name} ({total})")

    def advance() -> None:
        progress.advance(current["task"])
        current["done"] += 1
        if not err.is_terminal and current["done"] % max(1, current["total"] // 10) == 0:
            err.print(f"gen {number}: {current['name']} {current['done']}/{current['total']}")

    with progress:
        yield Reporter(start=start, advance=advance, note=lambda text: err.print(f"[yellow]{text}[/]"))


def _kept_edit(expansion: dict) -> str:
    from molt.evolve.expansion import kept_edit

    kept = kept_edit(expansion)
    if kept is None:
        return f"none kept ({len(expansion.get('trials', []))} tried)"
    return f"{kept.kind}{' of ' + kept.function if kept.function else ''}: {kept.text!r}"


def _generation_table(state: dict) -> None:
    phases = state["phases"]
    found, expansion, collected, update, gate = (phases.get(p, {}) for p in ("discovery", "expansion", "collected", "update", "gate"))
    dataset = (f"dataset {collected['rows']} rows ({collected.get('solved_problems')}/{collected.get('problems')} problems solved by a sample, "
               f"{collected.get('references')} variant references, {collected.get('rehearsed', 0)} rehearsed, {collected.get('rated')} rated turns); ") if "rows" in collected else ""
    console.print(
        f"[bold]generation {state['generation']}[/] ({state['target']}, incumbent {state['incumbent']}): "
        f"discovery kept {found.get('kept')}/{found.get('proposed')} variants {found.get('by_operator')}; "
        f"bank score {expansion.get('bank_score', 0):.2f}, failures {expansion.get('failures')}; "
        f"HCP edit: {_kept_edit(expansion)}; {dataset}"
        f"{state['config'].get('update', 'sft').upper()} {update.get('steps')} steps → {update.get('adapter')}, candidate {update.get('pair')}"
    )
    table = Table("check", "incumbent", "candidate", "Δ", "interval of Δ", "passes when", "", title=f"gate of generation {state['generation']}: {gate.get('reason')}")
    for c in gate.get("checks", []):
        ratio = c["name"] == "guard:latency"
        delta = f"×{c['after'] / c['before']:.2f}" if ratio and c["before"] else f"{c['after'] - c['before']:+.3f}"
        interval = f"[×{c['low']:.2f}, ×{c['high']:.2f}]" if ratio else f"[{c['low']:+.3f}, {c['high']:+.3f}]"
        table.add_row(c["name"] + (" (reused)" if c.get("note") else ""), f"{c['before']:.3f}", f"{c['after']:.3f}", delta, interval, c["threshold"], "[green]pass[/]" if c["passed"] else "[red]fail[/]")
    console.print(table)
    timed = [f"{name} {_minutes(phases[name]['seconds'])}" for name in ("discovery", "expansion", "collected", "update", "gate") if "seconds" in phases.get(name, {})]
    if timed:
        console.print(f"time: {', '.join(timed)} (phases resumed from an earlier run count that run's time)")


def _minutes(seconds: float) -> str:
    return f"{int(seconds) // 60} min {int(seconds) % 60:02d} s"


@registry_app.command("list")
def registry_list(
    kind: Annotated[Optional[str], typer.Option(help="Only records of this kind: base, dataset, job, adapter, router, hcp, pair, evaluation.")] = None,
    db: DbOption = None,
) -> None:
    """Every record, oldest first, with the aliases that point at it."""
    from molt.registry.lineage import describe

    registry = _registry(db)
    pointing: dict[str, list[str]] = {}
    for alias, target in registry.aliases().items():
        pointing.setdefault(target, []).append(alias)
    table = Table("created", "record", "aliases")
    for entry in registry.records(kind):
        table.add_row(f"{entry.created_at:%Y-%m-%d %H:%M:%S}", describe(entry), ", ".join(pointing.get(entry.id, [])))
    console.print(table)


@registry_app.command("show")
def registry_show(
    ref: Annotated[str, typer.Argument(help="A record id (or its start) or an alias.")],
    db: DbOption = None,
) -> None:
    """One record as JSON: kind, name, content hash, attributes, parents."""
    import dataclasses
    import json

    entry = _record(_registry(db), ref)
    console.print_json(json.dumps(dataclasses.asdict(entry), default=str))


@registry_app.command("lineage")
def registry_lineage(
    ref: Annotated[str, typer.Argument(help="A record id (or its start) or an alias, e.g. production.")],
    png: Annotated[Optional[Path], typer.Option(help="Also draw the ancestry as a picture in this PNG file.")] = None,
    db: DbOption = None,
) -> None:
    """The record and everything it was made from, as a tree."""
    from molt.registry.lineage import draw, tree

    registry = _registry(db)
    with _registry_errors():
        lineage = registry.lineage(ref)
    console.print(tree(lineage, registry.aliases()))
    if png:
        console.print(f"drawn to {draw(lineage, png, f'lineage of {ref}')}")


@registry_app.command("alias")
def registry_alias(
    name: Annotated[str, typer.Argument(help="The alias to move (any name).")],
    ref: Annotated[str, typer.Argument(help="The record it should point at.")],
    reason: Annotated[str, typer.Option(help="Why, for the record.")] = "moved by hand",
    actor: Actor = None,
    db: DbOption = None,
) -> None:
    """Point an alias at a record; the move is recorded."""

    with _registry_errors():
        move = _registry(db).move(name, ref, _actor(actor), reason)
    console.print(f"{name}: {move.from_id or '(new)'} → {move.to_id}")


@registry_app.command("promote")
def registry_promote(
    ref: Annotated[str, typer.Argument(help="A pair, or an adapter revision: then a new pair is made from the alias's pair with that specialist switched to it.")],
    alias: Annotated[str, typer.Option(help="The alias to move.")] = "production",
    reason: Annotated[str, typer.Option(help="Why, for the record.")] = "promoted by hand",
    actor: Actor = None,
    db: DbOption = None,
) -> None:
    """Make a pair the one ``molt up`` serves (alias production by default)."""
    from molt.registry.pairs import with_adapter

    registry = _registry(db)
    with _registry_errors():
        target = registry.get(ref)
        if target.kind == "adapter":
            current = registry.resolve_alias(alias)
            if current is None:
                fail(f"alias {alias!r} names no pair to put adapter {target.id} into; promote a pair first")
            target = with_adapter(registry, current[0], target.id)
            console.print(f"new pair {target.id}: {alias}'s pair with {target.attributes['members']['specialists']}")
        elif target.kind != "pair":
            fail(f"{ref!r} is a {target.kind} record; promote a pair or an adapter revision")
        move = registry.move(alias, target.id, _actor(actor), reason)
    console.print(f"{alias}: {move.from_id or '(new)'} → {move.to_id}; a running `molt up` serves it after a restart")


@registry_app.command("rollback")
def registry_rollback(
    alias: Annotated[str, typer.Argument(help="The alias to move back.")] = "production",
    reason: Annotated[str, typer.Option(help="Why, for the record.")] = "rollback",
    actor: Actor = None,
    db: DbOption = None,
) -> None:
    """Move an alias back to where its last move took it from."""

    with _registry_errors():
        move = _registry(db).rollback(alias, _actor(actor), reason)
    console.print(f"{alias}: {move.from_id} → {move.to_id} (rolled back)")


@registry_app.command("history")
def registry_history(
    alias: Annotated[Optional[str], typer.Argument(help="Only this alias's moves.")] = None,
    db: DbOption = None,
) -> None:
    """Every alias move: when, from where to where, who, why."""
    table = Table("#", "when", "alias", "from", "to", "who", "why")
    for move in _registry(db).history(alias):
        table.add_row(str(move.id), f"{move.at:%Y-%m-%d %H:%M:%S}", move.alias, move.from_id or "", move.to_id, move.actor, move.reason)
    console.print(table)


@registry_app.command("gc")
def registry_gc(
    min_age: Annotated[float, typer.Option(help="Leave stored folders younger than this many seconds (a registration may be under way).")] = 3600,
    db: DbOption = None,
) -> None:
    """Delete stored files that no record names (left by an interrupted registration)."""
    removed = _registry(db).gc(min_age)
    for path in removed:
        console.print(f"removed {path}")
    console.print(f"{len(removed)} orphan folder(s) removed")


def _since(value: Optional[str]):
    """An ISO date or time (UTC unless it says), or an age: 30m, 12h, 7d."""
    import re
    from datetime import datetime, timedelta, timezone

    if value is None:
        return None
    age = re.fullmatch(r"(\d+(?:\.\d+)?)([mhd])", value.strip())
    if age:
        unit = {"m": "minutes", "h": "hours", "d": "days"}[age.group(2)]
        return datetime.now(timezone.utc) - timedelta(**{unit: float(age.group(1))})
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        fail(f"--since {value!r}: give an ISO date or time (2026-12-01, 2026-12-01T09:30) or an age (30m, 12h, 7d)")
    return moment.astimezone(timezone.utc) if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


@experience_app.command("export")
def experience_export(
    out: Annotated[Optional[Path], typer.Option(help="Write the JSONL here; default: standard output.")] = None,
    since: Annotated[Optional[str], typer.Option(help="Only turns since this ISO date/time or age (30m, 12h, 7d).")] = None,
    specialist: Annotated[Optional[str], typer.Option(help="Only turns this specialist answered.")] = None,
    feedback: Annotated[Optional[str], typer.Option(help="Only turns with this feedback: up or down.")] = None,
    db: DbOption = None,
) -> None:
    """Logged turns as chat JSONL (the specialist's own view, then its answer) that `molt train sft
    --data` reads. Turns whose view or answer the HCP kept private are skipped."""
    import json

    from molt.experience.log import RATINGS, export
    from molt.home import write_atomic

    if feedback is not None and feedback not in RATINGS:
        fail(f"--feedback must be one of {', '.join(RATINGS)}, not {feedback!r}")
    rows = [json.dumps(row, ensure_ascii=False) + "\n" for row in export(_registry(db).engine, _since(since), specialist, feedback)]
    if out is None:
        print("".join(rows), end="")
    else:
        write_atomic(out, "".join(rows))
    err.print(f"{len(rows)} turn(s) exported" + (f" to {out}" if out else ""))


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
