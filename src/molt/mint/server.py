"""``molt mint serve``: the MinT operations over HTTP, JSON in and out.

- ``POST /api/v1/create_model`` → ``model_id``; ``POST /api/v1/create_sampling_session`` →
  ``sampling_session_id``.
- ``POST /api/v1/<op>`` for each operation in ``molt.mint.operations`` → ``request_id``; the work
  is queued on the base's ordered worker at once.
- ``POST /api/v1/retrieve_future`` {request_id, timeout} → {status: done, result} or {status:
  pending} after waiting up to ``timeout`` seconds; a failed request answers with its error. A
  result is kept until retrieved once, or for 10 minutes after it finished.
- Errors are ``{"error": {"type", "message"}}``: 400 for a bad request or one past the
  server's limits (``MintLimits``: bases, rank, runs, samples, datums), 429 when a base's queue is
  full, 404 for an unknown id, 500 for a server fault; 401 without the bearer token when the
  server has one (``--api-key`` / ``$MOLT_API_KEY``), 413 for a body over the cap.
"""

import asyncio
import time
import uuid

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from molt.http_api import Guard
from molt.mint.futures import APIFuture
from molt.mint.operations import REQUESTS, RESULTS, CreateModelRequest, CreateSamplerRequest
from molt.mint.service import BusyError, LocalService, UnknownIdError

MAX_WAIT_SECONDS = 60.0
MAX_BODY_BYTES = 256 << 20
"""A forward_backward of max_data long datums fits well under this."""
KEEP_SECONDS = 600.0
"""Finished results nobody retrieved (Tinker clients often never wait on optim_step) are dropped
after this long, so a long session does not grow without bound."""


class RetrieveRequest(BaseModel):
    request_id: str
    timeout: float = Field(30.0, ge=0, le=MAX_WAIT_SECONDS)


def error(status: int, e: Exception) -> JSONResponse:
    kind = "ValueError" if isinstance(e, (ValidationError, RequestValidationError)) else type(e).__name__
    return JSONResponse({"error": {"type": kind, "message": str(e)}}, status_code=status)


def status_of(e: Exception) -> int:
    if isinstance(e, LookupError):
        return 404
    if isinstance(e, BusyError):
        return 429
    return 400 if isinstance(e, (ValueError, ValidationError, RequestValidationError)) else 500


def create_app(service: LocalService, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="molt MinT", summary="Tinker-compatible LoRA training over HTTP")
    app.add_middleware(Guard, prefixes=("/api/",), max_body_bytes=max_body_bytes, token=token)
    futures: dict[str, tuple[str, APIFuture, float]] = {}

    def forget_stale() -> None:
        now = time.monotonic()
        for request_id, (_, future, created) in list(futures.items()):
            if future.done() and now - created > KEEP_SECONDS:
                futures.pop(request_id, None)

    async def request_error(request: Request, e: Exception) -> JSONResponse:
        return error(status_of(e), e)

    for kind in (ValueError, LookupError, ValidationError, RequestValidationError):  # other exceptions: 500
        app.add_exception_handler(kind, request_error)

    @app.get("/health")
    def health() -> dict:
        return {"status": "ok"}

    @app.post("/api/v1/create_model")
    def create_model(body: dict) -> dict:  # plain def: loading a base blocks, so it runs in the threadpool
        return {"model_id": service.create_model(CreateModelRequest.model_validate(body))}

    @app.post("/api/v1/create_sampling_session")
    def create_sampling_session(body: dict) -> dict:
        return {"sampling_session_id": service.create_sampler(CreateSamplerRequest.model_validate(body))}

    @app.post("/api/v1/retrieve_future")
    async def retrieve_future(body: dict):
        request = RetrieveRequest.model_validate(body)
        if request.request_id not in futures:
            raise UnknownIdError(f"unknown request_id {request.request_id!r} (results are kept until retrieved once)")
        op, future, _ = futures[request.request_id]
        try:
            result = await asyncio.wait_for(asyncio.shield(future.result_async()), request.timeout)
        except TimeoutError:
            return {"status": "pending"}
        except Exception as e:
            futures.pop(request.request_id, None)
            return error(status_of(e), e)
        futures.pop(request.request_id, None)
        return {"status": "done", "result": TypeAdapter(RESULTS[op]).dump_python(result, mode="json")}

    @app.post("/api/v1/{op}")
    def submit(op: str, body: dict) -> dict:
        if op not in REQUESTS:
            raise UnknownIdError(f"unknown operation {op!r}; known: {', '.join(REQUESTS)}")
        forget_stale()
        request_id = f"req-{uuid.uuid4().hex}"
        futures[request_id] = (op, service.submit(op, REQUESTS[op].model_validate(body)), time.monotonic())
        return {"request_id": request_id}

    return app
