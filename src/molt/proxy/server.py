"""``molt proxy serve``: the Mixture-of-LoRA system behind the OpenAI chat API.

- ``POST /v1/chat/completions`` with ``model="molt"`` routes each turn; a specialist's label as
  the model bypasses routing. Stateless: the client resends history (see ``store.py``).
- Every answer says which specialist answered and why: the ``molt`` field of the response and
  the ``x-molt-specialist`` / ``x-molt-route-reason`` headers.
- ``GET /v1/models`` lists ``molt`` and each specialist; ``GET /health``.
- With ``[environment] api_key_env`` in the HCP, every /v1 request needs ``Authorization: Bearer
  <that variable's value>`` (401 otherwise); bodies over the size cap get 413 and turns beyond
  the in-flight and queue bounds get 429 (``limits.py``).
The proxy reaches the engine only through the OpenAI API at the HCP's engine URL.
"""

import os
import time
import uuid
from contextlib import asynccontextmanager
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from molt.engine.routes import error_json
from molt.hcp import HCP
from molt.models import load_tokenizer
from molt.models.renderer import get_renderer
from molt.proxy.limits import Admission, Limits, Overloaded, authorised
from molt.proxy.loop import Conversation, EngineError, TurnLoop
from molt.proxy.store import ConversationStore, adopt, fingerprint
from molt.router import LabelScoringRouter

SYSTEM_MODEL = "molt"


class ChatRequest(BaseModel):
    model: str = SYSTEM_MODEL
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    stream: bool = False


def split(messages: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(leading system messages, earlier history, the new messages: a user message or tool results)."""
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    system, rest = messages[:count], messages[count:]
    start = len(rest)
    while start > 0 and rest[start - 1].get("role") == "tool":
        start -= 1
    if start == len(rest):
        start -= 1  # the last message itself: a user message, checked by the loop
    return system, rest[:start], rest[start:]


def api_token(hcp: HCP) -> str | None:
    name = hcp.environment.api_key_env
    if name is None:
        return None
    if not os.environ.get(name):
        raise ValueError(f"the HCP asks for bearer-token auth with ${name}, which is not set")
    return os.environ[name]


def create_app(hcp: HCP, limits: Limits = Limits()) -> FastAPI:
    store = ConversationStore()
    token = api_token(hcp)
    admission = Admission(limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with httpx.AsyncClient(base_url=hcp.model.engine_url.rstrip("/"), timeout=600) as engine:
            renderer = get_renderer(load_tokenizer(hcp.model.base), hcp.tools.call_format)
            app.state.loop = TurnLoop(hcp, LabelScoringRouter(hcp, renderer, engine), engine)
            yield
            await app.state.loop.aclose()

    app = FastAPI(title="molt proxy", lifespan=lifespan)
    app.state.admission = admission
    labels = [s.label for s in hcp.specialists]

    @app.middleware("http")
    async def admit(request: Request, call_next):
        if request.url.path.startswith("/v1/"):
            if not authorised(request.headers.get("authorization"), token):
                return error_json(401, "missing or wrong bearer token", "AuthenticationError")
            size = request.headers.get("content-length")
            if size is not None and int(size) > limits.max_request_bytes:
                return error_json(413, f"request body of {size} bytes is over the {limits.max_request_bytes}-byte limit", "RequestTooLargeError")
        return await call_next(request)

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict:
        created = int(time.time())
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "molt"} for name in [SYSTEM_MODEL, *labels]]}

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        if body.model != SYSTEM_MODEL and body.model not in labels:
            return error_json(404, f"model {body.model!r} does not exist; use {SYSTEM_MODEL!r} or a specialist: {', '.join(labels)}", "NotFoundError", "model")
        if body.stream:
            return error_json(400, "streaming through the proxy is not available yet; send stream=false", "BadRequestError", "stream")
        system, history, current = split(body.messages)
        conversation = store.get(fingerprint(system + history))
        if conversation is None:
            conversation = adopt(system, history, hcp.router.default_label) if history else Conversation(tuple(system))
        try:
            async with admission.turn():
                result = await request.app.state.loop.run(conversation, current, body.tools, None if body.model == SYSTEM_MODEL else body.model)
        except Overloaded as e:
            return error_json(429, str(e), "RateLimitError")
        except ValueError as e:
            return error_json(400, str(e), "BadRequestError", "messages")
        except EngineError as e:
            return error_json(502, str(e), "EngineError")
        store.put(fingerprint(body.messages + [result.message]), result.conversation)
        decision = result.decision
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()), "model": body.model,
            "choices": [{"index": 0, "message": result.message, "finish_reason": "tool_calls" if result.message.get("tool_calls") else "stop"}],
            "usage": result.usage, "molt": {"specialist": decision.label, "reason": decision.reason},
        }
        return JSONResponse(answer, headers={"x-molt-specialist": decision.label, "x-molt-route-reason": decision.reason.encode("ascii", "replace").decode()})

    return app
