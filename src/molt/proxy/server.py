"""``molt proxy serve``: the Mixture-of-LoRA system behind the OpenAI chat API.

- ``POST /v1/chat/completions`` with ``model="molt"`` routes each turn; a specialist's label as
  the model bypasses routing. Stateless: the client resends history (see ``store.py``).
  Streaming passes the engine's chunks through once the route is known. The client's
  ``max_tokens`` / ``max_completion_tokens`` (``max_output_tokens`` on /v1/responses),
  ``temperature`` and ``top_p`` apply to the answer, the length capped by the HCP's bound.
- Every answer says which specialist answered and why: the ``molt`` field of the response and
  the ``x-molt-specialist`` / ``x-molt-route-reason`` headers.
- ``POST /v1/responses``: stateful with ``previous_response_id``; every response is an immutable
  snapshot, so branches from one response never see each other. ``stream: true`` sends the
  Responses API's events.
- ``GET /v1/models`` lists ``molt`` and each specialist; ``GET /health``; ``GET /metrics``
  (Prometheus: turns by specialist and route kind, seconds per hop, refused tool calls, view
  cuts, in-flight and queued turns).
- Errors: a bad request is 400, a body over the cap 413 (counted on the bytes received), a full
  queue 429 with ``Retry-After``; the engine's own 4xx pass through, an unreachable engine is 503
  and a failing one 502, with the conversation unchanged; a failure mid-stream is an SSE error
  event and no turn is stored.
- With ``[environment] api_key_env`` in the HCP, every /v1 request needs ``Authorization: Bearer
  <that variable's value>`` (401 otherwise); ``[model] engine_api_key_env`` names the token the
  proxy sends to an engine started with ``--api-key``.

- With ``[[tools.proxies]]`` in the HCP, the harness acts for the ``[actions] specialists``:
  it runs their calls of those services itself (function calling) or their code in the
  conversation's sandboxed session (REPL), per ``[actions] mode``; the client gets the answer,
  and ``molt.checks.actions`` says how many model calls and actions it took.

The proxy reaches the engine only through the OpenAI API at the HCP's engine URL. The modules:
``protocol`` (request and response shapes), ``service`` (a request's work, free of HTTP),
``routes`` (HTTP), ``loop`` (route → answer → summary), ``views``, ``store``, ``limits``.
"""

import logging
import os
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
from fastapi import FastAPI

from molt.experience.log import ProxyState
from molt.harness.actions import ActionHarness
from molt.harness.memory import MemoryInputError
from molt.harness.proxies import Journal, ProxyRunner
from molt.harness.substrate import isolation
from molt.harness.tools import ToolLibrary
from molt.hcp import HCP
from molt.home import molt_home
from molt.http_api import Guard, error_json, install_validation_handler
from molt.models import load_tokenizer
from molt.models.renderer import get_renderer
from molt.proxy.limits import Limits
from molt.proxy.loop import TurnLoop
from molt.proxy.routes import router
from molt.proxy.service import ProxyService
from molt.registry import Registry
from molt.router import make_router

log = logging.getLogger("molt.proxy")


def env_token(name: str | None, what: str) -> str | None:
    """The value of the environment variable an HCP names for a token (None when it names none)."""
    if name is None:
        return None
    if not os.environ.get(name):
        raise ValueError(f"the HCP asks for {what} with ${name}, which is not set")
    return os.environ[name]


def action_harness(hcp: HCP, db: str | None) -> ActionHarness | None:
    """The harness that acts with the HCP's tool proxies: sessions and the proxies' journal under
    $MOLT_HOME/actions/<hcp name>, saved and promoted helpers in the registry at ``db``."""
    if not hcp.tools.proxies:
        return None
    root = molt_home() / "actions" / hcp.name
    log.info("action sandbox: %s", isolation().describe())
    return ActionHarness(ProxyRunner(hcp.tools.proxies, Journal(root / "journal.jsonl")), hcp.actions, root, ToolLibrary(Registry(db)))


def create_app(
    hcp: HCP, limits: Limits = Limits(), summaries: bool = True, route_log: Path | None = None, db: str | None = None, pair: str | None = None,
    replicated: bool = False,
) -> FastAPI:
    """``db``: the database that keeps conversations and the experience log (default ``$MOLT_DB``,
    else SQLite in $MOLT_HOME); ``pair``: the registry pair served, named in the log;
    ``replicated``: one of several proxies on ``db`` (a conversation may hop between them)."""
    token = env_token(hcp.environment.api_key_env, "bearer-token auth")
    engine_token = env_token(hcp.model.engine_api_key_env, "the engine's token")
    engine = httpx.AsyncClient(
        base_url=hcp.model.engine_url.rstrip("/"), timeout=600, headers={"authorization": f"Bearer {engine_token}"} if engine_token else None
    )
    renderer = get_renderer(load_tokenizer(hcp.model.base), hcp.tools.call_format)
    state = ProxyState(hcp.experience, db, pair, replicated)
    harness = action_harness(hcp, db)
    loop = TurnLoop(hcp, make_router(hcp, renderer, engine), engine, renderer, summaries, route_log, harness)
    loop.pair = pair
    service = ProxyService(hcp, loop, state, limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        await service.aclose()
        if harness is not None:
            harness.close()
        await engine.aclose()
        state.close()

    app = FastAPI(title="molt proxy", lifespan=lifespan)
    app.state.service = service
    app.add_middleware(Guard, prefixes=("/v1/",), max_body_bytes=limits.max_request_bytes, token=token)
    install_validation_handler(app)
    app.add_exception_handler(MemoryInputError, lambda request, e: error_json(400, str(e), "BadRequestError"))
    app.include_router(router)
    return app
