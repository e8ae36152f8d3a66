"""``molt proxy serve``: the Mixture-of-LoRA system behind the OpenAI chat API.

- ``POST /v1/chat/completions`` with ``model="molt"`` routes each turn; a specialist's label as
  the model bypasses routing. Stateless: the client resends history (see ``store.py``).
  Streaming passes the engine's chunks through once the route is known. The client's
  ``max_tokens`` / ``max_completion_tokens`` (``max_output_tokens`` on /v1/responses),
  ``temperature`` and ``top_p`` apply to the answer, the length capped by the HCP's bound.
- Every answer says which specialist answered and why: the ``molt`` field of the response and
  the ``x-molt-specialist`` / ``x-molt-route-reason`` headers.
- ``POST /v1/responses``: stateful with ``previous_response_id``; every response is an immutable
  snapshot, so branches from one response never see each other.
- ``GET /v1/models`` lists ``molt`` and each specialist; ``GET /health``; ``GET /metrics``
  (Prometheus: turns by specialist and route kind, seconds per hop, in-flight and queued turns).
- With ``[environment] api_key_env`` in the HCP, every /v1 request needs ``Authorization: Bearer
  <that variable's value>`` (401 otherwise); bodies over the size cap get 413 and turns beyond
  the in-flight and queue bounds get 429 (``limits.py``).
The proxy reaches the engine only through the OpenAI API at the HCP's engine URL.
"""

import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, Field

from molt.engine.routes import error_json
from molt.hcp import HCP
from molt.models import load_tokenizer
from molt.models.renderer import get_renderer
from molt.proxy.limits import Admission, Limits, Overloaded, authorised
from molt.proxy.loop import Conversation, EngineError, Plan, Sampling, TurnLoop, merge_delta
from molt.proxy.responses_api import chat_tools, input_messages, output_items, usage_of
from molt.proxy.store import ConversationStore, adopt, fingerprint
from molt.router import RouteDecision, make_router

SYSTEM_MODEL = "molt"


class ResponsesRequest(BaseModel):
    model: str = SYSTEM_MODEL
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    previous_response_id: str | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    tools: list[dict[str, Any]] | None = None
    stream: bool = False

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.max_output_tokens, self.temperature, self.top_p)


class ChatRequest(BaseModel):
    model: str = SYSTEM_MODEL
    messages: list[dict[str, Any]] = Field(min_length=1)
    max_tokens: int | None = Field(None, ge=1)
    """Deprecated by OpenAI in favour of max_completion_tokens, which wins when both are sent."""
    max_completion_tokens: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    tools: list[dict[str, Any]] | None = None
    stream: bool = False

    @property
    def sampling(self) -> Sampling:
        limit = self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
        return Sampling(limit, self.temperature, self.top_p)


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


class HeldStreamingResponse(StreamingResponse):
    """A stream that releases its admission slot however it ends, even when the client leaves
    before the body generator ever started (a never-started generator runs no ``finally``)."""

    def __init__(self, content, slot: AsyncExitStack, **kwargs):
        super().__init__(content, **kwargs)
        self.slot = slot

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.slot.aclose()


def turn_error(e: Exception, param: str) -> JSONResponse:
    """A turn that did not happen: 429 when full, 400 for a bad request (naming ``param``), 502 when the engine failed."""
    if isinstance(e, Overloaded):
        return error_json(429, str(e), "RateLimitError")
    if isinstance(e, EngineError):
        return error_json(502, str(e), "EngineError")
    return error_json(400, str(e), "BadRequestError", param)


def attribution(decision: RouteDecision) -> dict:
    return {"specialist": decision.label, "reason": decision.reason}


def headers(decision: RouteDecision) -> dict:
    return {"x-molt-specialist": decision.label, "x-molt-route-reason": decision.reason.encode("ascii", "replace").decode()}


def create_app(hcp: HCP, limits: Limits = Limits(), summaries: bool = True, route_log: Path | None = None) -> FastAPI:
    store, snapshots = ConversationStore(), ConversationStore()
    token = api_token(hcp)
    admission = Admission(limits)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        async with httpx.AsyncClient(base_url=hcp.model.engine_url.rstrip("/"), timeout=600) as engine:
            renderer = get_renderer(load_tokenizer(hcp.model.base), hcp.tools.call_format)
            app.state.loop = TurnLoop(hcp, make_router(hcp, renderer, engine), engine, summaries, route_log)
            yield
            await app.state.loop.aclose()

    app = FastAPI(title="molt proxy", lifespan=lifespan)
    app.state.admission, app.state.store, app.state.snapshots = admission, store, snapshots
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

    def unknown_model(model: str) -> JSONResponse:
        return error_json(404, f"model {model!r} does not exist; use {SYSTEM_MODEL!r} or a specialist: {', '.join(labels)}", "NotFoundError", "model")

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/metrics")
    async def metrics(request: Request) -> PlainTextResponse:
        return PlainTextResponse(request.app.state.loop.metrics.render(admission.in_flight, admission.waiting), media_type="text/plain; version=0.0.4")

    @app.get("/v1/models")
    async def models() -> dict:
        created = int(time.time())
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "molt"} for name in [SYSTEM_MODEL, *labels]]}

    @app.post("/v1/chat/completions")
    async def chat(body: ChatRequest, request: Request):
        if body.model != SYSTEM_MODEL and body.model not in labels:
            return unknown_model(body.model)
        loop: TurnLoop = request.app.state.loop
        system, history, current = split(body.messages)
        conversation = store.get(fingerprint(system + history))
        if conversation is None:
            conversation = adopt(system, history, hcp.router.default_label) if history else Conversation(tuple(system))
            if conversation.pending is not None:
                conversation = await loop.route_pending(conversation, None if body.model == SYSTEM_MODEL else body.model, body.tools)
        slot = AsyncExitStack()  # the admission slot is held until the answer is delivered (streams: until the last chunk)
        streaming = False
        try:
            await slot.enter_async_context(admission.turn())
            plan = await loop.plan(conversation, current, None if body.model == SYSTEM_MODEL else body.model, body.tools)
            if body.stream:
                streaming = True  # the response releases the slot
                return HeldStreamingResponse(streamed(loop, plan, body), slot, media_type="text/event-stream", headers=headers(plan.decision))
            message, usage = await loop.answer(plan.decision.label, plan.view, body.tools, body.sampling)
        except (Overloaded, ValueError, EngineError) as e:
            return turn_error(e, "messages")
        finally:
            if not streaming:
                await slot.aclose()
        result = loop.finish(plan, message, usage)
        store.put(fingerprint(body.messages + [message]), result.conversation)
        answer = {
            "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()), "model": body.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": usage, "molt": attribution(plan.decision),
        }
        return JSONResponse(answer, headers=headers(plan.decision))

    @app.post("/v1/responses")
    async def responses(body: ResponsesRequest, request: Request):
        """Stateful turns: each stored response is an immutable snapshot of the conversation, so
        two requests continuing the same ``previous_response_id`` branch without seeing each other."""
        if body.model != SYSTEM_MODEL and body.model not in labels:
            return unknown_model(body.model)
        if body.stream:
            return error_json(400, "streaming /v1/responses is not available yet; send stream=false", "BadRequestError", "stream")
        system = ({"role": "system", "content": body.instructions},) if body.instructions else ()
        conversation = snapshots.get(body.previous_response_id) if body.previous_response_id else Conversation(system)
        if conversation is None:
            return error_json(404, f"no response {body.previous_response_id!r} (responses are kept while the proxy runs)", "NotFoundError", "previous_response_id")
        try:
            current, tools = input_messages(body.input), chat_tools(body.tools)
            async with admission.turn():
                result = await request.app.state.loop.run(conversation, current, tools, None if body.model == SYSTEM_MODEL else body.model, body.sampling)
        except (Overloaded, ValueError, EngineError) as e:
            return turn_error(e, "input")
        response_id = f"resp_{uuid.uuid4().hex}"
        snapshots.put(response_id, result.conversation)
        answer = {
            "id": response_id, "object": "response", "created_at": int(time.time()), "model": body.model, "status": "completed",
            "output": output_items(result.message), "previous_response_id": body.previous_response_id, "usage": usage_of(result.usage),
            "molt": attribution(result.decision),
        }
        return JSONResponse(answer, headers=headers(result.decision))

    async def streamed(loop: TurnLoop, plan: Plan, body: ChatRequest) -> AsyncIterator[str]:
        """The engine's chunks under the proxy's id and model; the turn is stored only after the
        last one, so a client that leaves mid-stream leaves the conversation as it was."""
        base = {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk", "created": int(time.time()), "model": body.model, "molt": attribution(plan.decision)}
        message: dict = {"role": "assistant"}
        usage: dict = {}
        try:
            async for chunk in loop.answer_stream(plan.decision.label, plan.view, body.tools, body.sampling):
                usage = chunk.get("usage") or usage
                for choice in chunk.get("choices", []):
                    merge_delta(message, choice.get("delta") or {})
                yield f"data: {json.dumps({**base, 'choices': chunk.get('choices', []), **({'usage': chunk['usage']} if chunk.get('usage') else {})})}\n\n"
        except EngineError as e:
            yield f"data: {json.dumps({'error': {'message': str(e), 'type': 'EngineError', 'code': 502}})}\n\n"
            return
        if "content" not in message and "tool_calls" not in message:
            message["content"] = ""
        store.put(fingerprint(body.messages + [message]), loop.finish(plan, message, usage).conversation)
        yield "data: [DONE]\n\n"

    return app
