"""FastAPI routes of the proxy: map service results to JSON or SSE, and ``TurnError`` to OpenAI
error JSON with the status it names (429s carry ``Retry-After``)."""

import hashlib
from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, StreamingResponse

from molt.http_api import error_json
from molt.proxy.loop import Plan
from molt.proxy.protocol import ChatRequest, FeedbackRequest, ResponsesRequest, route_headers
from molt.proxy.service import ProxyService, Streamed, TurnError

router = APIRouter()


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
    return await respond(body.stream, lambda: proxy.chat_stream(body, client), lambda: proxy.chat(body, client))


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
