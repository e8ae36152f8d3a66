"""The HTTP side of ``ServiceClient(base_url=...)``: molt's typed requests over the Tinker HTTP
protocol (``molt.mint.server`` documents it), the same wire the ``tinker`` SDK speaks, so molt's
client works against ``molt mint serve`` and any other Tinker-protocol service.

Each call is submitted at once and answers a request id; its result is long-polled with
``retrieve_future``. Training calls carry the run's ``seq_id`` 1, 2, 3… so the server runs them
in order, and a retried call is recognised and not applied twice.

The network may fail at any point of a call. A request whose connection breaks, times out or
meets a 502/503/504 is sent again, the same body, with backoff: a training call repeated with its
``seq_id`` gets its first request id back (its work is done once: exactly-once optimizer steps), a
poll is a read, a sample is pure. So a fault mid-step costs time, never a step.
"""

import asyncio
import itertools
import logging
import threading
import time

import httpx
from pydantic import BaseModel

from molt.mint import wire
from molt.mint.checkpoints import CheckpointError, molt_path
from molt.mint.futures import APIFuture
from molt.mint.losses import LossInputError
from molt.mint.operations import CreateModelRequest, CreateSamplerRequest
from molt.mint.service import BusyError, LimitError, UnknownIdError

POLL_SECONDS = 30.0
RETRIES = 6
"""Tries after the first before a network failure reaches the caller."""
BACKOFF_S = 0.25
"""The pause before the first resend, doubling each time, at most 16 times this."""
RETRY_STATUS = (502, 503, 504)

log = logging.getLogger("molt.mint")


class MintServerError(RuntimeError):
    """The server failed in a way that is not the request's fault."""


ERRORS: dict[str, type[Exception]] = {
    e.__name__: e for e in (CheckpointError, LossInputError, UnknownIdError, LimitError, BusyError, wire.UnsupportedError, ValueError)
}


def raise_for_error(response: httpx.Response) -> dict:
    body = response.json() if response.headers.get("content-type", "").startswith("application/json") else {}
    if response.is_success:
        return body
    detail = body.get("detail") or body.get("error", {}).get("message") if isinstance(body, dict) else None
    kind = body.get("error_type") if isinstance(body, dict) else None
    raise ERRORS.get(kind or "", MintServerError)(detail or f"HTTP {response.status_code}: {response.text[:200]}")


class RemoteFuture(APIFuture):
    def __init__(self, service: "RemoteService", request_id: str, decode):
        self._service, self.request_id, self._decode = service, request_id, decode
        self._outcome: tuple[bool, object] | None = None  # (ok, result or exception)

    def result(self, timeout: float | None = None):
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._outcome is None:
            self._poll()
            if self._outcome is None and deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"request {self.request_id} not done after {timeout} s")
        ok, value = self._outcome
        if not ok:
            raise value
        return value

    async def result_async(self):
        return await asyncio.to_thread(self.result)

    def done(self) -> bool:
        return self._outcome is not None

    def _poll(self) -> None:
        response = self._service.post(
            "/api/v1/retrieve_future", json={"request_id": self.request_id}, timeout=POLL_SECONDS + 60,
            headers={"accept": f"{wire.PROTOBUF}, application/json"},
        )  # fmt: skip
        try:
            if response.is_success and response.headers.get("content-type", "").startswith(wire.PROTOBUF):
                self._outcome = (True, self._decode(response.content))
                return
            body = raise_for_error(response)
        except Exception as e:
            self._outcome = (False, e)
            return
        if body.get("type") == "try_again":
            return
        if "error" in body:
            kind = ERRORS.get(body.get("error_type") or "", ValueError if body.get("category") == "user" else MintServerError)
            self._outcome = (False, kind(body["error"]))
        else:
            self._outcome = (True, self._decode(body))


class RemoteService:
    def __init__(self, base_url: str, timeout: float, api_key: str | None = None):
        headers = {"x-api-key": api_key} if api_key else None
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)
        self.session_id = raise_for_error(self.post("/api/v1/create_session", json={"tags": ["molt"]}))["session_id"]
        self._models, self._samplers = itertools.count(), itertools.count()
        self._seq: dict[str, itertools.count] = {}
        self._lock = threading.Lock()

    def create_model(self, request: CreateModelRequest) -> str:
        body = {"session_id": self.session_id, "model_seq_id": next(self._models), **request.model_dump(mode="json", exclude_none=True)}
        return self._submit("/api/v1/create_model", body, lambda result: result["model_id"]).result()

    def create_sampler(self, request: CreateSamplerRequest) -> str:
        body = {"session_id": self.session_id, "sampling_session_seq_id": next(self._samplers), **request.model_dump(mode="json", exclude_none=True)}
        return raise_for_error(self.post("/api/v1/create_sampling_session", json=body))["sampling_session_id"]

    def submit(self, op: str, request: BaseModel) -> RemoteFuture:
        if op in ("sample", "compute_logprobs"):
            return self._sample(op, request)
        seq_id = self._next_seq(request.model_id)
        if op in ("forward", "forward_backward"):
            body = wire.forward_request_to_pb(request, seq_id, forward_only=op == "forward")
            reply = self.post("/api/v1/forward_backward", content=body, headers={"content-type": wire.PROTOBUF})
            return RemoteFuture(self, raise_for_error(reply)["request_id"], wire.output_from_pb)
        base = {"model_id": request.model_id, "seq_id": seq_id}
        if op == "optim_step":
            return self._submit("/api/v1/optim_step", base | {"adam_params": request.adam_params.model_dump()}, lambda r: r.get("metrics", {}))
        if op in ("save_state", "save_weights_for_sampler"):
            route = "/api/v1/save_weights" if op == "save_state" else "/api/v1/save_weights_for_sampler"
            return self._submit(route, base | {"path": request.name}, lambda r: molt_path(r["path"]))  # molt's client speaks molt:// paths
        if op in ("load_state", "load_weights"):
            return self._submit("/api/v1/load_weights", base | {"path": request.path, "optimizer": getattr(request, "with_optimizer", False)}, lambda r: None)
        raise UnknownIdError(f"unknown operation {op!r}")

    def _sample(self, op: str, request: BaseModel) -> RemoteFuture:
        body = {
            "sampling_session_id": request.sampling_session_id, "seq_id": self._next_seq(request.sampling_session_id),  # a resent sample runs once
            "num_samples": 1, "prompt": request.prompt.model_dump(mode="json"),
        }  # fmt: skip
        if op == "sample":
            params = request.sampling_params.model_dump(mode="json", exclude_none=True)
            body |= {"num_samples": request.num_samples, "sampling_params": params, "prompt_logprobs": request.include_prompt_logprobs}
            return self._submit("/api/v1/asample", body, wire.sample_from_pb)
        body |= {"sampling_params": {"max_tokens": 1, "temperature": 0.0}, "prompt_logprobs": True}
        return self._submit("/api/v1/asample", body, lambda raw: wire.sample_from_pb(raw).prompt_logprobs)

    def _submit(self, route: str, body: dict, decode) -> RemoteFuture:
        return RemoteFuture(self, raise_for_error(self.post(route, json=body))["request_id"], decode)

    def post(self, route: str, **kwargs) -> httpx.Response:
        """POST, sent again on a broken connection, a timeout or a 502/503/504 (see the module's doc)."""
        attempt = 0
        while True:
            try:
                response = self.http.post(route, **kwargs)
                if response.status_code not in RETRY_STATUS or attempt == RETRIES:
                    return response
                failure = f"HTTP {response.status_code}"
            except httpx.TransportError as e:
                if attempt == RETRIES:
                    raise MintServerError(f"{route}: the MinT server did not answer after {RETRIES + 1} tries: {type(e).__name__} {e}".rstrip()) from e
                failure = type(e).__name__
            log.warning("%s: %s; sending it again (try %d of %d)", route, failure, attempt + 2, RETRIES + 1)
            time.sleep(BACKOFF_S * min(2**attempt, 16))
            attempt += 1

    def _next_seq(self, model_id: str) -> int:
        with self._lock:
            return next(self._seq.setdefault(model_id, itertools.count(1)))
