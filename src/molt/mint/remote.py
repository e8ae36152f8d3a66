"""The HTTP side of ``ServiceClient(base_url=...)``: the same typed requests, posted as JSON to
``molt mint serve``; each returns a request id whose result is fetched by ``retrieve_future``
(long polls, so a slow training step costs no busy waiting)."""

import asyncio
import time

import httpx
from pydantic import TypeAdapter

from molt.mint.checkpoints import CheckpointError
from molt.mint.futures import APIFuture
from molt.mint.losses import LossInputError
from molt.mint.operations import RESULTS, CreateModelRequest, CreateSamplerRequest
from molt.mint.service import UnknownIdError

POLL_SECONDS = 30.0


class MintServerError(RuntimeError):
    """The server failed in a way that is not the request's fault."""


ERRORS: dict[str, type[Exception]] = {e.__name__: e for e in (CheckpointError, LossInputError, UnknownIdError, ValueError)}


def raise_for_error(response: httpx.Response) -> dict:
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.is_success:
        return body
    error = body.get("error", {}) if isinstance(body, dict) else {}
    raise ERRORS.get(error.get("type"), MintServerError)(error.get("message") or f"HTTP {response.status_code}: {response.text[:200]}")


class RemoteFuture(APIFuture):
    def __init__(self, service: "RemoteService", request_id: str, op: str):
        self._service, self.request_id, self._op = service, request_id, op
        self._outcome: tuple[bool, object] | None = None  # (ok, result or exception)

    def result(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._outcome is None:
            wait = POLL_SECONDS if deadline is None else max(0.0, min(POLL_SECONDS, deadline - time.monotonic()))
            self._poll(wait)
            if self._outcome is None and deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"request {self.request_id} not done after {timeout} s")
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    async def result_async(self):
        return await asyncio.to_thread(self.result)

    def done(self) -> bool:
        if self._outcome is None:
            self._poll(0.0)
        return self._outcome is not None

    def _poll(self, wait: float) -> None:
        response = self._service.http.post("/api/v1/retrieve_future", json={"request_id": self.request_id, "timeout": wait}, timeout=wait + 60)
        try:
            body = raise_for_error(response)
        except Exception as e:
            self._outcome = (False, e)
            return
        if body.get("status") == "done":
            self._outcome = (True, TypeAdapter(RESULTS[self._op]).validate_python(body["result"]))


class RemoteService:
    def __init__(self, base_url: str, timeout: float, api_key: str | None = None):
        headers = {"authorization": f"Bearer {api_key}"} if api_key else None
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)

    def create_model(self, request: CreateModelRequest) -> str:
        return raise_for_error(self.http.post("/api/v1/create_model", json=request.model_dump(mode="json")))["model_id"]

    def create_sampler(self, request: CreateSamplerRequest) -> str:
        return raise_for_error(self.http.post("/api/v1/create_sampling_session", json=request.model_dump(mode="json")))["sampling_session_id"]

    def submit(self, op: str, request) -> RemoteFuture:
        body = raise_for_error(self.http.post(f"/api/v1/{op}", json=request.model_dump(mode="json")))
        return RemoteFuture(self, body["request_id"], op)
