"""The in-process MinT service: resident bases, the policies trained on them, sampling sessions.

``ServiceClient()`` calls it directly and ``molt mint serve`` puts it behind HTTP; either way an
operation is a typed request (``molt.mint.operations``) run on its base's ordered worker, so
calls on one base execute in submission order, as Tinker guarantees.
"""

import uuid
from dataclasses import dataclass
from typing import Any

import torch
from pydantic import BaseModel

from molt.engine.config import native_bf16
from molt.jsonfile import read_json_object
from molt.mint import checkpoints
from molt.mint.backend import LocalBackend, Policy
from molt.mint.checkpoints import CheckpointError, resolve
from molt.mint.futures import APIFuture, OrderedWorker
from molt.mint.longstraw import LongStraw
from molt.mint.operations import (
    REQUESTS,
    CreateModelRequest,
    CreateSamplerRequest,
    ForwardRequest,
    LoadStateRequest,
    OptimStepRequest,
    SaveRequest,
)
from molt.mint.types import ForwardBackwardOutput
from molt.mint.sampling import SamplingEngines, SamplingSession


class UnknownIdError(LookupError):
    """A model_id or sampling_session_id this service never issued."""


class LimitError(ValueError):
    """A request past one of the service's limits (``MintLimits``)."""


class BusyError(LimitError):
    """A base's worker has ``max_queued`` operations waiting: retry once some finish (HTTP 429)."""


@dataclass(frozen=True)
class MintLimits:
    """What one service accepts. In-process use trusts its caller (any base); ``molt mint serve``
    names the bases it serves, so a request cannot make the server load or convert other files."""

    bases: tuple[str, ...] | None = None
    """Base sources runs and samplers may use (names `molt models info` knows); None: any."""
    max_rank: int = 128
    max_runs: int = 32
    max_samplers: int = 64
    max_samples: int = 64
    """``num_samples`` of one sample request."""
    max_data: int = 1024
    """Datums in one forward / forward_backward request."""
    max_queued: int = 256
    """Operations waiting on one base's worker; more are refused until some finish."""

    def check_base(self, base_model: str) -> None:
        """Refuse a base this server does not serve (before anything is loaded or converted)."""
        if self.bases is not None and base_model not in self.bases:
            raise LimitError(f"base {base_model!r} is not served here; this server trains and samples {', '.join(self.bases)}")


def resolve_dtype(dtype: str) -> torch.dtype:
    """'auto' is bfloat16 where the CPU computes it natively, else float32."""
    if dtype == "auto":
        return torch.bfloat16 if native_bf16() else torch.float32
    if dtype not in ("float32", "bfloat16"):
        raise ValueError(f"dtype must be auto, float32 or bfloat16, not {dtype!r}")
    return getattr(torch, dtype)


@dataclass(frozen=True)
class RunInfo:
    """What the HTTP front tells about a run (``get_info``, ``training_runs``)."""

    base_model: str
    rank: int
    arch: str


@dataclass
class TrainingRun:
    backend: LocalBackend
    policy: Policy
    worker: OrderedWorker


class LocalService:
    def __init__(self, dtype: str = "float32", limits: MintLimits = MintLimits(), long_context: LongStraw = LongStraw()):
        self.dtype, self.limits, self.long_context = resolve_dtype(dtype), limits, long_context
        self._backends: dict[str, tuple[LocalBackend, OrderedWorker]] = {}
        self._runs: dict[str, TrainingRun] = {}
        self._samplers: dict[str, SamplingSession] = {}
        self._engines = SamplingEngines(self.dtype)

    def create_model(self, request: CreateModelRequest, name: str | None = None) -> str:
        """A new training run; ``name``: its model_id (default: a fresh ``run-…``)."""
        self.check_new_run(request, name, self._runs)
        if request.base_model not in self._backends:
            self._backends[request.base_model] = (LocalBackend(request.base_model, self.dtype, long_context=self.long_context), OrderedWorker(f"mint-{request.base_model}"))
        backend, worker = self._backends[request.base_model]
        policy = backend.create_policy(name or f"run-{uuid.uuid4().hex[:12]}", request.lora_config)
        self._runs[policy.name] = TrainingRun(backend, policy, worker)
        return policy.name

    def check_new_run(self, request: CreateModelRequest, name: str | None, runs: dict) -> None:
        """Refuse a run over the limits (a base not served, a rank too high, too many runs) or a taken name."""
        self.limits.check_base(request.base_model)
        if name is not None and name in runs:
            raise LimitError(f"a training run named {name!r} exists")
        if request.lora_config.rank > self.limits.max_rank:
            raise LimitError(f"LoRA rank {request.lora_config.rank} is over this server's limit of {self.limits.max_rank}")
        if len(runs) >= self.limits.max_runs:
            raise LimitError(f"this server holds {len(runs)} training runs, its limit")

    def create_sampler(self, request: CreateSamplerRequest, name: str | None = None) -> str:
        """A session sampling a saved revision (``model_path``, a molt:// or tinker:// path) or the
        bare base; ``name``: its id (default: a fresh ``sampler-…``)."""
        base_model = request.base_model
        if base_model is None:
            if request.model_path is None:
                raise ValueError("create_sampling_client needs model_path or base_model")
            base_model = base_model_of(request.model_path)
        self.limits.check_base(base_model)
        if len(self._samplers) >= self.limits.max_samplers:
            raise LimitError(f"this server holds {len(self._samplers)} sampling sessions, its limit")
        session_id = name or f"sampler-{uuid.uuid4().hex[:12]}"
        self._samplers[session_id] = self._engines.session(base_model, request.model_path)
        return session_id

    def sampler(self, session_id: str) -> SamplingSession:
        if session_id not in self._samplers:
            raise UnknownIdError(f"unknown sampling_session_id {session_id!r}")
        return self._samplers[session_id]

    def runs(self) -> dict[str, TrainingRun]:
        return dict(self._runs)

    def run(self, model_id: str) -> TrainingRun:
        if model_id not in self._runs:
            raise UnknownIdError(f"unknown model_id {model_id!r}: this server never created it, or it restarted since (runs live in memory; resume from a saved state)")
        return self._runs[model_id]

    def base_model(self, model_id: str) -> str:
        return self.run(model_id).backend.base_model

    def info(self, model_id: str) -> RunInfo:
        run = self.run(model_id)
        return RunInfo(run.backend.base_model, run.policy.config.rank, run.backend.model.config.model_type)

    def submit(self, op: str, request: BaseModel) -> APIFuture:
        if op not in REQUESTS:
            raise UnknownIdError(f"unknown operation {op!r}; known: {', '.join(REQUESTS)}")
        self.check_size(request)
        if op in ("sample", "compute_logprobs"):
            session = self.sampler(request.sampling_session_id)
            return self.queued(session.worker, getattr(session, op), request)
        run = self.run(request.model_id)
        return self.queued(run.worker, getattr(self, f"_{op}"), run, request)

    def check_size(self, request: BaseModel) -> None:
        samples, data = getattr(request, "num_samples", 1), getattr(request, "data", [])
        if samples > self.limits.max_samples:
            raise LimitError(f"num_samples {samples} is over this server's limit of {self.limits.max_samples}")
        if len(data) > self.limits.max_data:
            raise LimitError(f"{len(data)} datums in one request is over this server's limit of {self.limits.max_data}; split the batch")

    def queued(self, worker: OrderedWorker, fn, *args: Any) -> APIFuture:
        if worker.pending >= self.limits.max_queued:
            raise BusyError(f"{worker.pending} operations are waiting on this base, the server's limit; retry once some finish")
        return worker.submit(fn, *args)

    def _forward(self, run: TrainingRun, r: ForwardRequest) -> ForwardBackwardOutput:
        return run.backend.forward_backward(run.policy, r.data, r.loss_fn, r.loss_fn_config, backward=False)

    def _forward_backward(self, run: TrainingRun, r: ForwardRequest) -> ForwardBackwardOutput:
        return run.backend.forward_backward(run.policy, r.data, r.loss_fn, r.loss_fn_config)

    def _optim_step(self, run: TrainingRun, r: OptimStepRequest) -> dict[str, float]:
        return run.backend.optim_step(run.policy, r.adam_params)

    def _save_weights_for_sampler(self, run: TrainingRun, r: SaveRequest) -> str:
        with run.backend.lock:
            return checkpoints.save_sampler_weights(run.backend.model, run.policy, run.backend.base_model, run.policy.name, r.name)

    def _save_state(self, run: TrainingRun, r: SaveRequest) -> str:
        with run.backend.lock:
            return checkpoints.save_state(run.backend.model, run.policy, run.backend.base_model, run.policy.name, r.name)

    def _load_state(self, run: TrainingRun, r: LoadStateRequest) -> None:
        with run.backend.lock:
            checkpoints.load_state(run.backend.model, run.policy, r.path, r.with_optimizer)
            run.backend.prefixes.forget(run.policy.name)  # kept prompt states belong to the old weights

    def _load_weights(self, run: TrainingRun, r: LoadStateRequest) -> None:
        with run.backend.lock:
            checkpoints.load_sampler_weights(run.backend.model, run.policy, r.path)
            run.backend.prefixes.forget(run.policy.name)


def base_model_of(model_path: str) -> str:
    config = resolve(model_path) / "adapter_config.json"
    if not config.is_file():
        raise CheckpointError(f"no sampler revision at {model_path}")
    return read_json_object(config, CheckpointError)["base_model_name_or_path"]
