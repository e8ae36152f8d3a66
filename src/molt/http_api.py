"""HTTP pieces every molt server shares (engine, proxy, MinT): OpenAI-style error bodies, and a
guard in front of the app that checks the bearer token and caps the request body on the bytes
actually received (a chunked body has no ``Content-Length`` to trust).
"""

import hmac
import json
import os

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from molt.models.chat_shapes import first_problem

API_KEY_ENV = "MOLT_API_KEY"
"""Where ``molt engine serve`` and ``molt mint serve`` read their token when ``--api-key`` is not given."""


def error_body(status: int, message: str, type_: str, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": status}}


def error_json(status: int, message: str, type_: str, param: str | None = None, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, type_, param), status_code=status, headers=headers)


def sse_error(status: int, message: str, type_: str) -> str:
    """An error after a stream started: an SSE event with the OpenAI error body (clients raise it)."""
    return f"data: {json.dumps(error_body(status, message, type_))}\n\n"


def validation_error_json(e: RequestValidationError) -> JSONResponse:
    """A body that does not fit the request model: 400 naming the first bad field."""
    problems = [{**p, "loc": tuple(part for part in p["loc"] if part != "body")} for p in e.errors()]
    field = next((str(p["loc"][0]) for p in problems if p["loc"]), None)
    return error_json(400, first_problem(problems) if field else f"body: {problems[0]['msg']}", "BadRequestError", field)


def install_validation_handler(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, e: RequestValidationError) -> JSONResponse:
        return validation_error_json(e)


def authorised(headers: Headers, token: str | None) -> bool:
    """True when no token is configured, or the request carries it: ``Authorization: Bearer
    <token>`` (OpenAI clients) or ``X-API-Key: <token>`` (the Tinker SDK)."""
    if token is None:
        return True
    scheme, _, given = (headers.get("authorization") or "").partition(" ")
    if scheme.lower() != "bearer":
        given = headers.get("x-api-key") or ""
    return hmac.compare_digest(given.encode(), token.encode())


def api_key(given: str | None) -> str | None:
    """The server's token: ``--api-key``, else ``$MOLT_API_KEY``, else none (no auth)."""
    return given or os.environ.get(API_KEY_ENV) or None


class Guard:
    """ASGI middleware for requests under ``prefixes``: 401 without the bearer token (when one is
    set), 413 once the body passes ``max_body_bytes``. The body is read here, counted as it
    arrives, and replayed to the app; later ``receive`` calls pass through, so the app still sees
    the client disconnect."""

    def __init__(self, app: ASGIApp, prefixes: tuple[str, ...], max_body_bytes: int, token: str | None = None):
        self.app, self.prefixes, self.max_body_bytes, self.token = app, prefixes, max_body_bytes, token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(self.prefixes):
            return await self.app(scope, receive, send)
        headers = Headers(scope=scope)
        if not authorised(headers, self.token):
            return await error_json(401, "missing or wrong API key (Authorization: Bearer, or X-API-Key)", "AuthenticationError")(scope, receive, send)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body_bytes:
            return await self.too_large(int(declared))(scope, receive, send)
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            if len(body) > self.max_body_bytes:
                return await self.too_large(len(body), "at least ")(scope, receive, send)
            if not message.get("more_body"):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": bytes(body), "more_body": False}

        await self.app(scope, replay, send)

    def too_large(self, size: int, qualifier: str = "") -> JSONResponse:
        return error_json(413, f"request body of {qualifier}{size} bytes is over the {self.max_body_bytes}-byte limit", "RequestTooLargeError")
