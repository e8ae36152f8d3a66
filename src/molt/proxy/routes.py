"""FastAPI routes of the proxy: map service results to JSON or SSE, and ``TurnError`` to OpenAI
error JSON with the status it names (429s carry ``Retry-After``)."""

import asyncio
import hashlib
import json
from datetime import datetime
from collections.abc import Awaitable, Callable
from typing import TypeVar

from fastapi import APIRouter, Path, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict

from molt.experience.surfaces import MAX_STATE_BYTES
from molt.harness.memory import Memory
from molt.http_api import error_json
from molt.proxy.loop import Plan
from molt.proxy.protocol import ChatRequest, FeedbackRequest, ResponsesRequest, route_headers
from molt.proxy.service import ProxyService, Streamed, TurnError
from molt.ui.a2ui import catalog_document

router = APIRouter()
T = TypeVar("T")


def service(request: Request) -> ProxyService:
    return request.app.state.service


def client_of(request: Request) -> str:
    """Who a turn counts against for the per-client bound: the bearer token it carries (hashed,
    so no secret is held as a key), else the address it comes from."""
    header = request.headers.get("authorization")
    if header:
        return "token:" + hashlib.sha256(header.encode()).hexdigest()[:16]
    return "address:" + (request.client.host if request.client else "")


def turn_error_json(e: TurnError) -> JSONResponse:
    headers = {"retry-after": str(e.retry_after)} if e.retry_after is not None else None
    return error_json(e.status, str(e), e.type, e.param, headers)


class HeldStreamingResponse(StreamingResponse):
    """A stream that releases its admission slot however it ends, even when the client leaves
    before the body generator ever started (a never-started generator runs no ``finally``)."""

    def __init__(self, streamed: Streamed):
        super().__init__(streamed.lines, media_type="text/event-stream", headers=route_headers(streamed.plan.decision, streamed.plan.turn_id))
        self.slot = streamed.slot

    async def __call__(self, scope, receive, send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            await self.slot.aclose()


async def respond(stream: bool, streamed: Callable[[], Awaitable[Streamed]], answered: Callable[[], Awaitable[tuple[dict, Plan]]]):
    try:
        if stream:
            return HeldStreamingResponse(await streamed())
        answer, plan = await answered()
    except TurnError as e:
        return turn_error_json(e)
    return JSONResponse(answer, headers=route_headers(plan.decision, plan.turn_id))


@router.post("/v1/chat/completions")
async def chat(body: ChatRequest, request: Request):
    proxy = service(request)
    client = client_of(request)
    key = request.headers.get("idempotency-key")
    if key is None:
        return await respond(body.stream, lambda: proxy.chat_stream(body, client), lambda: proxy.chat(body, client))
    if body.stream:
        return error_json(400, "an Idempotency-Key request is answered whole: send it with stream=false", "BadRequestError", "stream")
    return await respond(False, proxy.chat_stream, lambda: proxy.chat_once(body, client, key))


@router.post("/v1/responses")
async def responses(body: ResponsesRequest, request: Request):
    proxy = service(request)
    client = client_of(request)
    return await respond(body.stream, lambda: proxy.respond_stream(body, client), lambda: proxy.respond(body, client))


@router.post("/v1/feedback")
async def feedback(body: FeedbackRequest, request: Request):
    """Thumbs up or down, and a comment, on a turn named by its ``x-molt-turn-id`` header."""
    try:
        return await service(request).feedback(body)
    except TurnError as e:
        return turn_error_json(e)


ID = r"^[A-Za-z0-9_.:-]{1,80}$"


class SurfaceStateBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    data: dict


@router.put("/v1/ui/state/{conversation}/{surface}")
async def put_surface_state(body: SurfaceStateBody, request: Request, conversation: str = Path(pattern=ID), surface: str = Path(pattern=ID)):
    """Keep what the user entered in a surface (its data model without private values), so a
    reloaded page shows it again."""
    if len(json.dumps(body.data)) > MAX_STATE_BYTES:
        return error_json(413, f"a surface's data is kept up to {MAX_STATE_BYTES} bytes", "BadRequestError", "data")
    await service(request).state.surfaces.put(conversation, surface, body.data)
    return {"conversation": conversation, "surface": surface, "kept": True}


@router.get("/v1/ui/state/{conversation}")
async def get_surface_state(request: Request, conversation: str = Path(pattern=ID)) -> dict:
    """Every kept surface data model of a conversation: ``{"surfaces": {surfaceId: data}}``."""
    return {"conversation": conversation, "surfaces": await service(request).state.surfaces.get(conversation)}


class MemoryBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    user: str
    key: str
    value: str
    valid_from: datetime | None = None
    """When it became true (default: now); with its zone."""


async def with_memory(request: Request, use: Callable[[Memory], T]) -> T:
    """Run a memory read or write off the event loop (bad input: ``MemoryInputError``, a 400)."""
    return await asyncio.to_thread(use, service(request).state.memory)


@router.get("/v1/memory")
async def memory_facts(request: Request, user: str, key: str | None = None) -> dict:
    """What molt remembers about ``user``: one fact per key, the newest valid one. With ``key``:
    that key's rows, the current one first, then its history."""
    await service(request).written(user)  # the facts of the user's finished turns are in the listing
    if key is not None:
        rows = await with_memory(request, lambda memory: memory.history(user, key))
        return {"user": user, "key": key, "history": [f.to_json() for f in rows]}
    return {"user": user, "facts": [f.to_json() for f in await with_memory(request, lambda memory: memory.facts(user))]}


@router.post("/v1/memory")
async def memory_correct(body: MemoryBody, request: Request) -> dict:
    """Tell or correct a fact (source ``user``): a new row that wins from ``valid_from`` on; the old value stays as history."""
    fact = await with_memory(request, lambda memory: memory.remember(body.user, body.key, body.value, valid_from=body.valid_from, source="user"))
    return {"user": body.user, "fact": fact.to_json()}


@router.delete("/v1/memory")
async def memory_forget(request: Request, user: str, key: str | None = None) -> dict:
    """Forget one key (every row of it) or, without ``key``, everything about ``user``."""
    return {"user": user, "key": key, "deleted": await with_memory(request, lambda memory: memory.forget(user, key))}


@router.get("/v1/ui/catalog")
async def ui_catalog(request: Request) -> dict:
    """The A2UI catalog this proxy's surfaces use, as JSON Schema (for renderers and other agents)."""
    return catalog_document(service(request).hcp.ui.catalog)


@router.get("/v1/models")
async def models(request: Request) -> dict:
    return service(request).models()


@router.get("/health")
async def health(request: Request) -> dict:
    """Liveness, and what is still training on a first start (``{"training": {label: state}}``)."""
    return service(request).health()


@router.get("/metrics")
async def metrics(request: Request) -> PlainTextResponse:
    proxy = service(request)
    return PlainTextResponse(proxy.loop.metrics.render(proxy.admission.in_flight, proxy.admission.waiting), media_type="text/plain; version=0.0.4")
