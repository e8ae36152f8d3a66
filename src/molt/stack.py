"""``molt up``: the whole serving stack in one process on the embedded model.

Without ``--hcp`` it serves the bootstrapped default HCP (trained specialists and router). When
``$MOLT_HOME`` has none yet, it serves the shipped HCP at once and trains in the background,
serving each specialist as soon as it is ready (``molt.specialists.background``).

The engine (OpenAI + vLLM adapter API) runs on a background thread at the engine port; the
proxy, with the web page at ``/``, serves the user at the main port until Ctrl-C. With questions
piped on stdin (a pipe or a file), each is answered through the proxy and the stack stops at end
of input (scripts, CI).
"""

import asyncio
import contextlib
import io
import os
import stat
import sys
from collections.abc import Iterator
from importlib import resources

import httpx
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from rich.console import Console

from molt.engine.config import EngineConfig
from molt.engine.server import create_app as create_engine_app
from molt.hcp import HCP
from molt.http_server import ServerThread, serve
from molt.models import LoadedModel, load_model
from molt.proxy.server import create_app as create_proxy_app
from molt.specialists.background import BackgroundBootstrap


def stack_hcp(hcp: HCP, engine_port: int) -> HCP:
    """The HCP with its engine URL pointing at the engine this process starts."""
    return with_engine(hcp, f"http://127.0.0.1:{engine_port}/v1")


def with_engine(hcp: HCP, engine_url: str, kind: str = "molt") -> HCP:
    return hcp.model_copy(update={"model": hcp.model.model_copy(update={"engine_url": engine_url, "engine_kind": kind})})


def engine_config(*hcps: HCP) -> EngineConfig:
    """The engine serving the base and every trained adapter of ``hcps`` (which share a base)."""
    adapters = {s.adapter: s.revision for hcp in hcps for s in hcp.specialists if s.adapter and s.revision}
    return EngineConfig(model=hcps[0].model.base, lora_modules=adapters)


@contextlib.contextmanager
def engine_thread(hcp: HCP, loaded: LoadedModel | None = None) -> Iterator[HCP]:
    """The HCP's engine (base and specialist adapters) on a background thread at a free port;
    yields the HCP pointed at it (benchmarks, tests)."""
    server = ServerThread(create_engine_app(engine_config(hcp), loaded or load_model(hcp.model.base)))
    with server:
        yield stack_hcp(hcp, server.port)


def proxy_with_page(hcp: HCP, pair: str | None = None, db: str | None = None, **options):
    """The proxy with the web app at ``/`` (its bundle, built from ``web/`` at install, at
    ``/static/app.js``) and, when a registry pair is served, a read-only view of the registry.
    ``options`` go to the proxy (``limits``, ``summaries``)."""
    app = create_proxy_app(hcp, pair=pair, db=db, **options)
    web = resources.files("molt.web")
    page = (web / "index.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> str:
        return page

    @app.get("/static/app.js", include_in_schema=False)
    async def bundle() -> Response:
        built = web / "static" / "app.js"
        if not built.is_file():
            return PlainTextResponse("the web app is not built: `make install` builds it (npm ci && npm run build in web/)", 503)
        return Response(built.read_bytes(), media_type="text/javascript")

    @app.get("/api/registry", include_in_schema=False)
    async def registry() -> Response:
        serving = app.state.service.loop.pair  # moves when a promoted or rolled-back pair is swapped in
        if serving is None:  # served from an HCP file, not from the registry
            return JSONResponse({"serving": None, "pairs": [], "lineage": ""})
        return JSONResponse(await asyncio.to_thread(registry_view, db, serving))

    return app


def registry_view(db: str | None, serving: str) -> dict:
    """The registry's pairs (newest first) with the aliases on each, and the served pair's lineage as text."""
    from molt.registry import Registry
    from molt.registry.lineage import tree

    registry = Registry(db)
    try:
        aliases = registry.aliases()
        pairs = sorted(registry.records("pair"), key=lambda e: e.created_at, reverse=True)
        text = Console(width=100, record=True, file=io.StringIO(), color_system=None)
        text.print(tree(registry.lineage(serving), aliases))
        return {
            "serving": serving,
            "pairs": [{"id": e.id, "name": e.name, "created": e.created_at.isoformat(timespec="seconds"), "aliases": sorted(a for a, target in aliases.items() if target == e.id)} for e in pairs],
            "lineage": text.export_text(),
        }
    finally:
        registry.close()


def run_stack(
    hcp: HCP, loaded: LoadedModel | None, host: str, port: int, engine_port: int, console: Console, err: Console, train: bool = False, pair: str | None = None,
    learn: bool = False, engine_url: str | None = None, engine_kind: str = "molt",
) -> None:
    """Serve ``hcp`` (the registry's ``pair``, when it is one, named in the experience log); with
    ``train``, also train its specialists and router in the background, each served as soon as
    it is ready (first start). Serving the registry, the stack follows ``production`` (a promoted
    or rolled-back pair is swapped in) and, with ``learn``, runs the learning worker
    (``molt.evolve.continual``). With ``engine_url`` an engine already running (vLLM, SGLang or
    another molt engine, per ``engine_kind``) serves, and the pair's adapters are loaded into it;
    else molt's engine runs here on ``loaded``."""
    from molt.engine.adapter_client import serve_specialists
    from molt.evolve.continual import LearningWorker, ProductionWatcher
    from molt.registry.pairs import by_revision

    hcp = by_revision(hcp) if pair else hcp
    say = lambda line: err.print(line, markup=False, highlight=False)  # noqa: E731
    with contextlib.ExitStack() as workers:
        if engine_url is None:
            hcp = stack_hcp(hcp, engine_port)
            assert loaded is not None, "molt's own engine needs the loaded base"
            started = workers.enter_context(ServerThread(create_engine_app(engine_config(hcp), loaded), port=engine_port))
            err.print(f"[dim]engine: {started}/v1 ({hcp.model.base})[/]")
        else:
            hcp = with_engine(hcp, engine_url, engine_kind)
            loaded_names = serve_specialists(hcp)
            err.print(f"[dim]engine: {engine_url} ({engine_kind}, base {hcp.model.base}; adapters loaded: {', '.join(loaded_names) or 'none needed'})[/]")
        app = proxy_with_page(hcp, pair)
        if train:
            err.print("[bold]First start:[/] the base answers now; the specialists and the router train in the background and are served as each is ready")
            BackgroundBootstrap(hcp, app.state.service, log=say).start()
        if pair or train:
            workers.callback(ProductionWatcher(app.state.service, None, hcp.learning.poll_s, say).start().close)
        if learn and pair and hcp.learning.enabled:
            err.print(f"[dim]learning: a `molt evolve` generation for {hcp.learning.target} every {hcp.learning.min_new_turns} new turns (--no-learn: off)[/]")
            workers.callback(LearningWorker(hcp.learning, None, say).start().close)
        if not questions_piped():
            err.print(f"molt is up: chat at [bold]http://{host}:{port}[/], OpenAI API at http://{host}:{port}/v1 (model 'molt'); Ctrl-C stops it")
            serve(app, host, port, log_level="warning")
            return
        with ServerThread(app, host=host, port=port) as url:
            answer_piped(url, console)


def questions_piped() -> bool:
    """stdin is a pipe or a file (``echo ... | molt up``); a terminal or /dev/null (a service) serves."""
    try:
        mode = os.fstat(sys.stdin.fileno()).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def answer_piped(url: str, console: Console) -> None:
    """Each stdin line is a user turn of one conversation, answered through the proxy."""
    messages: list[dict] = []
    with httpx.Client(base_url=url, timeout=600) as client:
        for line in sys.stdin:
            if not line.strip():
                continue
            messages.append({"role": "user", "content": line.strip()})
            console.print(f"you › {line.strip()}", markup=False, highlight=False)
            response = client.post("/v1/chat/completions", json={"model": "molt", "messages": messages})
            body = response.json()
            if response.is_error:
                messages.pop()
                console.print(f"error: {body['error']['message']}", markup=False)
                continue
            message = body["choices"][0]["message"]
            messages.append(message)
            console.print(f"molt [{body['molt']['specialist']}] › {message.get('content') or ''}", markup=False, highlight=False)
