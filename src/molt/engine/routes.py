"""FastAPI routes of the engine: map service results to JSON or SSE, and errors to OpenAI error JSON."""

import asyncio
from collections.abc import AsyncIterator, Awaitable

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse

from molt.engine.protocol import ChatCompletionRequest, CompletionRequest, LoadLoraAdapterRequest, UnloadLoraAdapterRequest
from molt.engine.service import EngineService, ServiceError
from molt.http_api import error_json, install_validation_handler, sse_error

router = APIRouter()


def service(request: Request) -> EngineService:
    return request.app.state.service


def install_error_handlers(app: FastAPI) -> None:
    install_validation_handler(app)

    @app.exception_handler(ServiceError)
    async def _service_error(request: Request, e: ServiceError) -> JSONResponse:
        return error_json(e.status, str(e), e.type, e.param)


async def until_disconnected(request: Request, work: Awaitable) -> object:
    """Await ``work``, cancelling it (and so aborting its engine requests) if the client leaves."""
    task = asyncio.ensure_future(work)
    while True:
        done, _ = await asyncio.wait({task}, timeout=0.25)
        if done:
            return task.result()
        if await request.is_disconnected():
            task.cancel()
            return Response(status_code=499)


async def sse(chunks: AsyncIterator[str]) -> AsyncIterator[str]:
    """Pass chunks through; an error after the stream started becomes an OpenAI error event."""
    try:
        async for chunk in chunks:
            yield chunk
    except ServiceError as e:
        yield sse_error(e.status, str(e), e.type)
        yield "data: [DONE]\n\n"


async def respond(request: Request, stream: bool, run, outputs):
    """SSE for a streaming request; otherwise the collected JSON (or 499 if the client left)."""
    if stream:
        return StreamingResponse(sse(run.stream(outputs)), media_type="text/event-stream")
    result = await until_disconnected(request, run.collect(outputs))
    return result if isinstance(result, Response) else JSONResponse(result)


@router.post("/v1/chat/completions")
async def chat_completions(body: ChatCompletionRequest, request: Request):
    return await respond(request, body.stream, *service(request).start_chat(body))


@router.post("/v1/completions")
async def completions(body: CompletionRequest, request: Request):
    return await respond(request, body.stream, *service(request).start_completion(body))


@router.get("/v1/models")
async def models(request: Request):
    return service(request).models()


@router.post("/v1/load_lora_adapter")
async def load_lora_adapter(body: LoadLoraAdapterRequest, request: Request):
    message = await asyncio.to_thread(service(request).load_adapter, body.lora_name, body.lora_path, body.load_inplace)
    return PlainTextResponse(message)


@router.post("/v1/unload_lora_adapter")
async def unload_lora_adapter(body: UnloadLoraAdapterRequest, request: Request):
    return PlainTextResponse(service(request).unload_adapter(body.lora_name))


@router.get("/health")
async def health() -> Response:
    return Response(status_code=200)


@router.get("/metrics")
async def metrics(request: Request):
    return PlainTextResponse(service(request).metrics(), media_type="text/plain; version=0.0.4")
