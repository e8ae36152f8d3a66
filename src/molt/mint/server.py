"""``molt mint serve``: MinT over the Tinker HTTP protocol, so the unmodified ``tinker`` SDK (and
molt's own ``ServiceClient(base_url=...)``) trains and samples here.

The protocol, as the SDK speaks it (``molt.mint.wire`` holds the bodies):

- Session: ``client/config``, ``create_session``, ``session_heartbeat``, ``sessions/{id}/finish``,
  ``telemetry`` (accepted, dropped). The key comes as ``X-API-Key`` (or a bearer token).
- Work is asynchronous: every training or sampling call answers ``{"request_id"}`` at once, and
  ``retrieve_future`` long-polls its result (``{"type": "try_again"}`` after ``LONG_POLL_SECONDS``).
  A failed request's result is ``{"error", "category"}``; forward / forward_backward and sample
  results are protobuf, the rest JSON. ``cancel_future`` drops a sample the client abandoned
  while it still waits in the sampler's queue (one already running finishes, unread).
- A training run is ``{session}:train:{n}``; its calls carry ``seq_id`` 1, 2, 3… and run in that
  order, even when they arrive out of order (the SDK sends a large batch's chunks in parallel).
  A call repeated with a ``seq_id`` already seen (a client retry) gets the first call's
  request id, so no step is applied twice.
- Checkpoints are ``tinker://<run>/weights/<name>`` (state) and ``.../sampler_weights/<name>``.
- Errors before a request is queued are 4xx with ``{"detail", "error_type"}``: 400 bad or
  unsupported input (images, server-side custom losses, other optimizers, bases not served),
  404 unknown ids, 401 a wrong key, 429 a full queue (the SDK retries it), 413 a body too large.
"""

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError

from molt.http_api import Guard
from molt.jsonfile import read_json_object
from molt.lora.format import read_adapter
from molt.mint import checkpoints, wire
from molt.mint.checkpoints import CheckpointError, molt_path, resolve, tinker_path
from molt.mint.losses import LOSSES, LossInputError
from molt.mint.operations import CreateModelRequest, CreateSamplerRequest, LoadStateRequest, OptimStepRequest, SampleRequest, SaveRequest
from molt.mint.service import BusyError, LocalService, UnknownIdError
from molt.mint.types import LoraConfig

LONG_POLL_SECONDS = 25.0
"""How long one retrieve_future waits for a result (the SDK gives up on a poll after 45 s)."""
KEEP_SECONDS = 600.0
"""Finished results are kept this long (a client may poll again after a dropped answer)."""
MAX_BODY_BYTES = 256 << 20
"""A forward_backward of max_data long datums fits well under this."""
GAP_SECONDS = 30.0
"""A run's call waits this long for the calls with lower seq_ids before it runs anyway (a client
that reserved a seq_id and never sent it must not stall its run)."""
PROTO_RESULTS = {"forward": wire.output_to_pb, "forward_backward": wire.output_to_pb, "sample": wire.sample_to_pb}


def error(status: int, e: Exception) -> JSONResponse:
    kind = "ValueError" if isinstance(e, (ValidationError, RequestValidationError)) else type(e).__name__
    return JSONResponse({"detail": str(e), "error_type": kind}, status_code=status)


def status_of(e: Exception) -> int:
    if isinstance(e, LookupError):
        return 404
    if isinstance(e, BusyError):
        return 429
    return 400 if isinstance(e, (ValueError, ValidationError, RequestValidationError)) else 500


def failure(e: BaseException) -> dict:
    """A failed request's result: ``category`` user for the request's own fault (never retried)."""
    user = isinstance(e, (ValueError, LookupError, ValidationError))
    return {"error": str(e), "category": "user" if user else "server", "error_type": type(e).__name__}


@dataclass
class Pending:
    op: str
    future: Future
    created: float = field(default_factory=time.monotonic)
    work: Future | None = None
    """The sampler's own future for a sample (cancel_future cancels it while it is queued)."""


class Sequencer:
    """Starts one training run's calls in ``seq_id`` order; remembers which request each seq_id got."""

    def __init__(self) -> None:
        self.next = 1
        self.parked: dict[int, Callable[[], None]] = {}
        self.seen: dict[int, str] = {}
        self.lock = threading.Lock()

    def admit(self, seq_id: int | None, request_id: str, start: Callable[[], None]) -> str:
        """The request id for this call: a repeat's first id, else ``request_id`` (its work
        started now when its turn has come, else once the calls before it have started)."""
        with self.lock:
            if seq_id is None:
                start()
                return request_id
            if seq_id in self.seen:
                return self.seen[seq_id]
            self.seen[seq_id] = request_id
            if seq_id > self.next:
                self.parked[seq_id] = start
                threading.Timer(GAP_SECONDS, self._give_up_waiting, (seq_id,)).start()
                return request_id
        try:
            start()
        except Exception:
            with self.lock:
                self.seen.pop(seq_id, None)  # refused, not run: a retry with this seq_id runs anew
            raise
        finally:
            self._advance(seq_id)
        return request_id

    def _advance(self, done: int) -> None:
        with self.lock:
            self.next = max(self.next, done + 1)
            ready = []
            while self.next in self.parked:
                ready.append(self.parked.pop(self.next))
                self.next += 1
        for start in ready:
            start()

    def _give_up_waiting(self, seq_id: int) -> None:
        with self.lock:
            if seq_id not in self.parked:
                return
            self.next = min(self.parked)
        self._advance(self.next - 1)


class TinkerState:
    """What the server holds besides the service: sessions, futures, per-run sequencers."""

    def __init__(self, service: LocalService):
        self.service = service
        self.futures: dict[str, Pending] = {}
        self.sequencers: dict[str, Sequencer] = {}
        self.samples: dict[tuple[str, int], str] = {}
        self.created: dict[str, str] = {}
        """model_id → the request that created it (a retried create gets the same answer)."""
        self.sampling_sessions: dict[str, str] = {}
        """``{session}:sample:{seq}`` → the sampler made for it (a retried create gets the same one)."""
        self.touched: dict[str, float] = {}
        self.setup = ThreadPoolExecutor(2, thread_name_prefix="mint-setup")
        self.lock = threading.Lock()

    def new_request(self, op: str) -> tuple[str, Future]:
        self.forget_stale()
        request_id = f"req-{uuid.uuid4().hex}"
        future: Future = Future()
        self.futures[request_id] = Pending(op, future)
        return request_id, future

    def forget_stale(self) -> None:
        """Drop finished results past ``KEEP_SECONDS``, and with them the retry records that point
        at them (the SDK stops retrying long before), so a long session does not grow without bound."""
        now = time.monotonic()
        for request_id, pending in list(self.futures.items()):
            if pending.future.done() and now - pending.created > KEEP_SECONDS:
                self.futures.pop(request_id, None)
        for key, request_id in list(self.samples.items()):
            if request_id not in self.futures:
                self.samples.pop(key, None)
        for sequencer in self.sequencers.values():
            with sequencer.lock:
                sequencer.seen = {seq: rid for seq, rid in sequencer.seen.items() if rid in self.futures or seq in sequencer.parked}

    def run_call(self, model_id: str, seq_id: int | None, op: str, request, check: Callable[[], None] = lambda: None) -> str:
        """Queue one training call in its run's seq_id order; errors a call can have before it
        is queued (unknown run, full queue, ``check``'s) are raised here when its turn is now. A
        refused call still takes its seq_id's turn, so the run's next call does not wait for it."""
        self.service.info(model_id)  # an unknown run is refused here
        self.touched[model_id] = time.time()
        request_id, future = self.new_request(op)
        immediate = True

        def start() -> None:
            try:
                check()
                chain(self.service.submit(op, request)._future, future)
            except Exception as e:
                if immediate:
                    raise
                future.set_exception(e)

        sequencer = self.sequencers.setdefault(model_id, Sequencer())
        try:
            answered = sequencer.admit(seq_id, request_id, start)
        except Exception:
            self.futures.pop(request_id, None)
            raise
        immediate = False
        if answered != request_id:
            self.futures.pop(request_id, None)
        return answered

    def background(self, op: str, fn: Callable[[], object]) -> str:
        """Setup work (loading a base, restoring a state) off the request thread."""
        request_id, future = self.new_request(op)
        chain(self.setup.submit(fn), future)
        return request_id


class CancelledByClient(RuntimeError):
    """The client abandoned this request (cancel_future) before it ran."""


def chain(source: Future, target: Future) -> None:
    def copy(done: Future) -> None:
        if done.cancelled():
            target.set_exception(CancelledByClient("cancelled by the client before it ran"))
        elif done.exception() is not None:
            target.set_exception(done.exception())
        else:
            target.set_result(done.result())

    source.add_done_callback(copy)


def encode(op: str, result) -> Response | dict:
    """A finished request's result as the SDK reads it."""
    if op in PROTO_RESULTS:
        return Response(PROTO_RESULTS[op](result), media_type=wire.PROTOBUF)
    if op == "optim_step":
        return {"metrics": result}
    if isinstance(result, str):  # a saved checkpoint
        return {"path": tinker_path(result)}
    return result or {}


def now_iso(timestamp: float | None = None) -> str:
    return datetime.fromtimestamp(timestamp if timestamp is not None else time.time(), UTC).isoformat()


def create_app(service: LocalService, token: str | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> FastAPI:
    app = FastAPI(title="molt MinT", summary="LoRA training and sampling over the Tinker HTTP protocol")
    app.add_middleware(Guard, prefixes=("/api/",), max_body_bytes=max_body_bytes, token=token)
    state = TinkerState(service)

    async def request_error(request: Request, e: Exception) -> JSONResponse:
        return error(status_of(e), e)

    for kind in (ValueError, LookupError, ValidationError, RequestValidationError):  # other exceptions: 500
        app.add_exception_handler(kind, request_error)

    # --- session ---------------------------------------------------------------------------

    @app.get("/health")
    @app.get("/api/v1/healthz")
    def health() -> dict:
        return {"status": "ok"}

    @app.post("/api/v1/client/config")
    def client_config() -> dict:
        return {"pjwt_auth_enabled": False, "fwdbwd_max_chunk_len": service.limits.max_data}

    @app.post("/api/v1/client/dynamic_config")
    def dynamic_config() -> dict:
        return {"sample_cancel_enabled": True}

    @app.post("/api/v1/create_session")
    def create_session(body: dict) -> dict:
        wire.CreateSession.model_validate(body)
        return {"type": "create_session", "session_id": f"session-{uuid.uuid4().hex[:12]}"}

    @app.post("/api/v1/session_heartbeat")
    def heartbeat() -> dict:
        return {"type": "session_heartbeat"}

    @app.post("/api/v1/sessions/{session_id}/finish")
    def finish(session_id: str) -> dict:
        return {}

    @app.post("/api/v1/telemetry")
    def telemetry() -> dict:
        return {"status": "accepted"}

    @app.get("/api/v1/get_server_capabilities")
    def capabilities() -> dict:
        bases = service.limits.bases or ()
        limits = {"trainable": True, "sampleable": True, "max_lora_rank": service.limits.max_rank}  # the SDK ignores max_lora_rank
        return {"supported_models": [{"model_name": b, **limits} for b in bases]}

    # --- training runs ---------------------------------------------------------------------

    @app.post("/api/v1/create_model")
    def create_model(body: dict) -> dict:
        r = wire.CreateModel.model_validate(body)
        if r.optimizer_config.type != "adamw":
            raise wire.UnsupportedError(f"optimizer {r.optimizer_config.type!r} is not supported; MinT trains with adamw")
        model_id = f"{r.session_id}:train:{r.model_seq_id}"
        if model_id in state.created:
            return {"request_id": state.created[model_id], "model_id": model_id}
        request = CreateModelRequest(base_model=r.base_model, lora_config=LoraConfig(**r.lora_config.model_dump()))
        service.limits.check_base(request.base_model)
        state.created[model_id] = request_id = state.background("create_model", lambda: {"model_id": service.create_model(request, model_id)})
        return {"request_id": request_id, "model_id": model_id}

    @app.post("/api/v1/get_info")
    def get_info(body: dict) -> dict:
        from molt.models.loader import tokenizer_folder

        model_id = wire.ModelRef.model_validate(body).model_id
        info = service.info(model_id)
        model_data = {"arch": info.arch, "model_name": info.base_model, "tokenizer_id": str(tokenizer_folder(info.base_model))}
        return {"type": "get_info", "model_id": model_id, "model_data": model_data, "is_lora": True, "lora_rank": info.rank, "model_name": info.base_model}

    @app.post("/api/v1/forward_backward")
    async def forward_backward(request: Request) -> dict:
        body = await request.body()
        if not request.headers.get("content-type", "").startswith(wire.PROTOBUF):
            raise ValueError(f"forward_backward takes a {wire.PROTOBUF} body (a ForwardBackwardRequest)")
        if request.headers.get("content-encoding") == "zstd":
            raise wire.UnsupportedError("zstd request bodies are not enabled on this server")
        forward, seq_id, forward_only = wire.forward_request_from_pb(body)

        def known_loss() -> None:
            if forward.loss_fn not in LOSSES:
                raise LossInputError(f"unknown loss_fn {forward.loss_fn!r}; MinT has {', '.join(LOSSES)} (custom losses: forward_backward_custom)")

        op = "forward" if forward_only else "forward_backward"
        return {"request_id": await asyncio.to_thread(state.run_call, forward.model_id, seq_id, op, forward, known_loss), "model_id": forward.model_id}

    @app.post("/api/v1/optim_step")
    def optim_step(body: dict) -> dict:
        r = wire.OptimStep.model_validate(body)
        if r.adam_params is None:
            raise wire.UnsupportedError("optim_step needs adam_params; MinT trains with adamw only")
        request = OptimStepRequest(model_id=r.model_id, adam_params=r.adam_params)
        return {"request_id": state.run_call(r.model_id, r.seq_id, "optim_step", request), "model_id": r.model_id}

    @app.post("/api/v1/save_weights")
    def save_weights(body: dict) -> dict:
        r = wire.SaveWeights.model_validate(body)
        if not r.path:
            raise ValueError("save_weights needs a path (the checkpoint's name)")
        request_id = state.run_call(r.model_id, r.seq_id, "save_state", SaveRequest(model_id=r.model_id, name=r.path))
        return {"request_id": request_id, "model_id": r.model_id}

    @app.post("/api/v1/save_weights_for_sampler")
    def save_weights_for_sampler(body: dict) -> dict:
        r = wire.SaveWeights.model_validate(body)
        if r.kind != "snapshot":
            raise wire.UnsupportedError("inflight sampler weights are not supported; save a snapshot")
        name = r.path or f"sampler-{r.seq_id if r.seq_id is not None else uuid.uuid4().hex[:8]}"
        request_id = state.run_call(r.model_id, r.seq_id, "save_weights_for_sampler", SaveRequest(model_id=r.model_id, name=name))
        if r.path is None:  # save_weights_and_get_sampling_client: the answer is a session on the new weights
            session = r.model_id.rsplit(":train:", 1)[0]
            saved = state.futures[request_id]

            def open_session() -> dict:
                path = saved.future.result()
                sampler_id = f"{session}:sample:{r.sampling_session_seq_id or 0}:{uuid.uuid4().hex[:6]}"
                return {"sampling_session_id": service.create_sampler(CreateSamplerRequest(model_path=path), sampler_id)}

            request_id = state.background("save_weights_for_sampler", open_session)
        return {"request_id": request_id, "model_id": r.model_id}

    @app.post("/api/v1/load_weights")
    def load_weights(body: dict) -> dict:
        r = wire.LoadWeights.model_validate(body)
        path = molt_path(r.path)
        folder = resolve(path)
        op = "load_weights" if (folder / "adapter_config.json").is_file() else "load_state"  # a missing state fails as "no training state"
        if op == "load_weights" and r.optimizer:
            raise CheckpointError(f"{r.path} is a sampler revision (weights only); load a training state to restore the optimizer")
        if r.model_id is not None:
            request = LoadStateRequest(model_id=r.model_id, path=path, with_optimizer=r.optimizer)
            return {"request_id": state.run_call(r.model_id, r.seq_id, op, request), "model_id": r.model_id}
        if r.session_id is None or r.model_seq_id is None:
            raise ValueError("load_weights needs model_id, or session_id and model_seq_id (a new run from the checkpoint)")
        model_id = f"{r.session_id}:train:{r.model_seq_id}"
        if model_id in state.created:
            return {"request_id": state.created[model_id], "model_id": model_id}
        base, config = checkpoint_base(folder, r.base_model)

        def restore() -> dict:
            service.create_model(CreateModelRequest(base_model=base, lora_config=config), model_id)
            service.submit(op, LoadStateRequest(model_id=model_id, path=path, with_optimizer=r.optimizer)).result()
            return {"model_id": model_id, "path": r.path}

        service.limits.check_base(base)
        state.created[model_id] = request_id = state.background("load_weights", restore)
        return {"request_id": request_id, "model_id": model_id}

    # --- sampling --------------------------------------------------------------------------

    @app.post("/api/v1/create_sampling_session")
    def create_sampling_session(body: dict) -> dict:
        r = wire.CreateSamplingSession.model_validate(body)
        key = f"{r.session_id}:sample:{r.sampling_session_seq_id}"
        if key not in state.sampling_sessions:
            sampler_id = f"{key}:{uuid.uuid4().hex[:6]}"
            model_path = molt_path(r.model_path) if r.model_path else None
            service.create_sampler(CreateSamplerRequest(model_path=model_path, base_model=r.base_model), sampler_id)
            state.sampling_sessions[key] = sampler_id
        return {"type": "create_sampling_session", "sampling_session_id": state.sampling_sessions[key]}

    @app.get("/api/v1/samplers/{sampler_id}")
    def get_sampler(sampler_id: str) -> dict:
        session = service.sampler(sampler_id)
        path = tinker_path(session.adapter) if session.adapter else None
        return {"sampler_id": sampler_id, "base_model": session.engine.config.model, "model_path": path}

    @app.post("/api/v1/asample")
    def asample(body: dict) -> dict:
        r = wire.ASample.model_validate(body)
        if (missing := r.unsupported()) is not None:
            raise wire.UnsupportedError(f"{missing} are not supported by molt's sampler")
        key = (r.sampling_session_id, r.seq_id)
        if r.seq_id is not None and key in state.samples and state.samples[key] in state.futures:
            request_id = state.samples[key]
        else:
            request = SampleRequest(
                sampling_session_id=r.sampling_session_id, prompt=r.prompt, num_samples=r.num_samples,
                sampling_params=r.sampling_params, include_prompt_logprobs=r.prompt_logprobs,
            )  # fmt: skip
            future = service.submit("sample", request)
            request_id, slot = state.new_request("sample")
            chain(future._future, slot)
            state.futures[request_id].work = future._future
            if r.seq_id is not None:
                state.samples[key] = request_id
        return {"request_id": request_id, "sample_sequence_ids": [f"{request_id}:{i}" for i in range(r.num_samples)]}

    # --- futures ---------------------------------------------------------------------------

    @app.post("/api/v1/retrieve_future")
    async def retrieve_future(body: dict):
        r = wire.RetrieveFuture.model_validate(body)
        if r.request_id not in state.futures:
            raise UnknownIdError(f"unknown request_id {r.request_id!r}: this server never issued it, or it restarted since (runs and results live in memory: resume from your last save_state)")
        pending = state.futures[r.request_id]
        try:
            result = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(pending.future)), LONG_POLL_SECONDS)
        except TimeoutError:
            return {"type": "try_again", "request_id": r.request_id, "queue_state": "active"}
        except Exception as e:
            return failure(e)
        return encode(pending.op, result)

    @app.post("/api/v1/cancel_future")
    def cancel_future(body: dict) -> None:
        request_id = wire.RetrieveFuture.model_validate(body).request_id
        if request_id not in state.futures:
            raise UnknownIdError(f"unknown request_id {request_id!r}")
        if (work := state.futures[request_id].work) is not None:
            work.cancel()  # False (and no effect) once the sample runs

    # --- runs and checkpoints (RestClient) -------------------------------------------------

    def run_record(model_id: str) -> dict:
        info = service.info(model_id)
        return {
            "training_run_id": model_id, "base_model": info.base_model, "model_owner": "local", "is_lora": True,
            "lora_rank": info.rank, "last_request_time": now_iso(state.touched.get(model_id)),
        }  # fmt: skip

    @app.get("/api/v1/training_runs")
    def training_runs(limit: int = 20, offset: int = 0) -> dict:
        ids = sorted(service.runs())
        page = [run_record(i) for i in ids[offset : offset + limit]]
        return {"training_runs": page, "cursor": {"offset": offset, "limit": limit, "total_count": len(ids)}}

    @app.get("/api/v1/training_runs/{run_id}")
    def training_run(run_id: str) -> dict:
        return run_record(run_id)

    @app.get("/api/v1/training_runs/{run_id}/checkpoints")
    def run_checkpoints(run_id: str) -> dict:
        found = checkpoints.list_checkpoints(run_id)
        records = [
            {"checkpoint_id": f"{kind}/{name}", "checkpoint_type": "training" if kind == "weights" else "sampler",
             "time": now_iso(folder.stat().st_mtime), "tinker_path": f"{checkpoints.TINKER}{run_id}/{kind}/{name}",
             "size_bytes": sum(f.stat().st_size for f in folder.iterdir() if f.is_file())}
            for kind, name, folder in found
        ]  # fmt: skip
        return {"checkpoints": records}

    @app.post("/api/v1/weights_info")
    def weights_info(body: dict) -> dict:
        folder = resolve(molt_path(wire.WeightsInfo.model_validate(body).tinker_path))
        base, config = checkpoint_base(folder, None)
        return {"base_model": base, "is_lora": True, "lora_rank": config.rank, **config.model_dump(include={"train_unembed", "train_mlp", "train_attn"})}

    return app


def checkpoint_base(folder, base_model: str | None) -> tuple[str, LoraConfig]:
    """The base and LoRA configuration a checkpoint was trained with (a training state, or a
    sampler revision); ``base_model`` fills in for states saved before molt recorded it."""
    if (folder / "state.json").is_file():
        meta = read_json_object(folder / "state.json", CheckpointError)
        base = meta.get("base_model") or base_model
        if base is None:
            raise CheckpointError(f"{folder.name}: the state does not name its base model; pass base_model")
        return base, LoraConfig(**meta["config"])
    if (folder / "adapter_config.json").is_file():
        adapter = read_adapter(folder)
        config = read_json_object(folder / "adapter_config.json", CheckpointError)
        return config["base_model_name_or_path"], LoraConfig(rank=adapter.r)
    raise CheckpointError(f"no checkpoint at {folder.name}")
