"""MinT on Ray: ``molt mint serve --ray ADDRESS`` keeps its HTTP front (the Tinker protocol, as
``molt.mint.server`` documents it) and places the training runs in Ray actors, one per base. The
base stays resident in its worker and every run on it is a LoRA session multiplexed on that one
model, as Tinker's workers do. An actor runs one caller's tasks in submission order, so a run's
calls keep Tinker's ordering. Sampling stays in the front.

Requests and results cross to a worker as JSON (the typed models of ``molt.mint.operations``),
errors as their class name and message: nothing of molt's is pickled.

A worker that dies (its process killed, its node lost) is restarted by Ray. The service puts each
of its runs back (same model_id and LoRA config) and loads the run's last saved state, weights
and optimizer. The call that met the death fails with an error that says so: from which state
and step the run resumed. Later calls go to the new worker; the client repeats the calls made
since that state, as after a server restart. Workers read and write checkpoints under the
front's ``$MOLT_HOME`` (one machine, or a shared volume).
"""

import json
import os
import threading
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

from pydantic import BaseModel, TypeAdapter

from molt.home import molt_home
from molt.mint.futures import APIFuture
from molt.mint.longstraw import LongStraw
from molt.mint.operations import REQUESTS, RESULTS, CreateModelRequest, LoadStateRequest
from molt.mint.service import LocalService, MintLimits, RunInfo, UnknownIdError

RESTART_WAIT_S = 600.0
"""How long a call that met a dead worker waits for Ray to start its replacement."""
TRAINING_OPS = ("forward", "forward_backward", "optim_step", "save_weights_for_sampler", "save_state", "load_state", "load_weights")


class WorkerLostError(RuntimeError):
    """The worker holding a run died mid-call; the run was put back from its last saved state."""


class MintWorker:
    """A Ray actor's body: one resident base, the runs trained on it (a ``LocalService``)."""

    def __init__(self, dtype: str, limits: str, long_context: str, home: str):
        os.environ["MOLT_HOME"] = home
        self.incarnation = uuid.uuid4().hex
        """Tells a restarted worker (Ray runs this again in a new process) from the one it replaced."""
        bounds = json.loads(limits)
        bases = bounds.pop("bases")
        self.service = LocalService(dtype, MintLimits(bases=tuple(bases) if bases is not None else None, **bounds), LongStraw(**json.loads(long_context)))

    def create_model(self, request: str, name: str) -> str:
        self.service.create_model(CreateModelRequest.model_validate_json(request), name)
        return json.dumps({"info": asdict(self.service.info(name)), "incarnation": self.incarnation})

    def call(self, op: str, request: str) -> str:
        """``{"result": …}`` or ``{"error": class name, "message": …}``, with the worker's incarnation, as JSON."""
        try:
            result = self.service.submit(op, REQUESTS[op].model_validate_json(request)).result()
        except Exception as e:  # noqa: BLE001 — the front raises it again under its own class
            return json.dumps({"error": type(e).__name__, "message": str(e), "incarnation": self.incarnation})
        return '{"incarnation": "' + self.incarnation + '", "result": ' + TypeAdapter(RESULTS[op]).dump_json(result).decode() + "}"

    def pid(self) -> int:
        return os.getpid()

    def current(self) -> str:
        return self.incarnation


@dataclass
class RemoteRun:
    model_id: str
    request: CreateModelRequest
    info: RunInfo
    step: int = 0
    saved: str | None = None
    """The run's last saved state (``save_state``), what it resumes from after a worker dies."""
    saved_step: int = 0


@dataclass
class Worker:
    handle: object
    incarnation: str = ""
    """The worker process the runs are on (a restarted one has another)."""
    runs: list[str] = field(default_factory=list)


class RayService(LocalService):
    def __init__(
        self, address: str, dtype: str = "float32", limits: MintLimits = MintLimits(), long_context: LongStraw = LongStraw(), cpus_per_worker: float | None = None,
    ):
        """``address``: a running Ray cluster (``ray://…`` or ``host:port``), or ``local`` to start one
        here. ``cpus_per_worker``: the CPUs a worker reserves, which is also how many threads Ray
        lets its PyTorch use; default: as many as this machine has (one worker per node)."""
        import ray

        super().__init__(dtype, limits, long_context)  # sampling stays in the front
        self.ray = ray
        ray.init(address=None if address == "local" else address, include_dashboard=False, ignore_reinit_error=True, logging_level="warning")
        self.cpus_per_worker = cpus_per_worker or min(os.cpu_count() or 1, ray.cluster_resources().get("CPU", 1))
        self._actor = ray.remote(MintWorker)
        self._workers: dict[str, Worker] = {}
        self._remote: dict[str, RemoteRun] = {}
        self._lock = threading.Lock()
        self._settling = ThreadPoolExecutor(8, thread_name_prefix="mint-ray")
        """Threads that wait for the workers' replies (a run's calls are ordered by its worker)."""

    def worker(self, base_model: str) -> Worker:
        with self._lock:
            if base_model not in self._workers:
                options = {"name": f"mint-{base_model}-{uuid.uuid4().hex[:6]}", "max_restarts": -1, "max_task_retries": 0, "num_cpus": self.cpus_per_worker}
                limits = json.dumps({**asdict(self.limits), "bases": list(self.limits.bases) if self.limits.bases else None})
                handle = self._actor.options(**options).remote(str(self.dtype).removeprefix("torch."), limits, json.dumps(asdict(self.long_context)), str(molt_home()))
                self._workers[base_model] = Worker(handle)
            return self._workers[base_model]

    def create_model(self, request: CreateModelRequest, name: str | None = None) -> str:
        self.check_new_run(request, name, self._remote)
        name = name or f"run-{uuid.uuid4().hex[:12]}"
        worker = self.worker(request.base_model)
        created = json.loads(self.ray.get(worker.handle.create_model.remote(request.model_dump_json(), name)))
        with self._lock:
            if worker.incarnation and created["incarnation"] != worker.incarnation:
                self._put_back(worker, created["incarnation"])
            worker.incarnation = created["incarnation"]
            self._remote[name] = RemoteRun(name, request, RunInfo(**created["info"]))
            worker.runs.append(name)
        return name

    def remote_run(self, model_id: str) -> RemoteRun:
        if model_id not in self._remote:
            raise UnknownIdError(f"unknown model_id {model_id!r}: this server never created it, or it restarted since (runs live in memory; resume from a saved state)")
        return self._remote[model_id]

    def info(self, model_id: str) -> RunInfo:
        return self.remote_run(model_id).info

    def runs(self) -> dict[str, RunInfo]:
        return {model_id: run.info for model_id, run in self._remote.items()}

    def worker_pid(self, model_id: str) -> int:
        """The process that trains ``model_id`` (runs on one base share it)."""
        return self.ray.get(self._workers[self.remote_run(model_id).info.base_model].handle.pid.remote())

    def submit(self, op: str, request: BaseModel) -> APIFuture:
        if op not in TRAINING_OPS:
            return super().submit(op, request)
        self.check_size(request)
        run = self.remote_run(request.model_id)
        worker, future = self._workers[run.info.base_model], Future()
        reply = worker.handle.call.remote(op, request.model_dump_json())
        self._settling.submit(self._settled, run, op, worker, reply, future)
        return APIFuture(future)

    def _settled(self, run: RemoteRun, op: str, worker: Worker, reply, future: Future) -> None:
        try:
            self._settle(run, op, worker, reply, future)
        except Exception as e:  # noqa: BLE001 — whatever happens, the caller hears of it
            if not future.done():
                future.set_exception(e)

    def _settle(self, run: RemoteRun, op: str, worker: Worker, reply, future: Future) -> None:
        from molt.mint.remote import ERRORS

        try:
            answer = json.loads(self.ray.get(reply))
        except (self.ray.exceptions.RayActorError, self.ray.exceptions.ActorUnavailableError):  # the worker died, or is restarting, under this call
            future.set_exception(self._replaced(run, worker, None))
            return
        except Exception as e:  # noqa: BLE001 — Ray's own failure (a node lost, the cluster gone)
            future.set_exception(RuntimeError(f"the training worker failed: {e}"))
            return
        if answer["incarnation"] != worker.incarnation:  # it ran on a replacement that never had the run
            future.set_exception(self._replaced(run, worker, answer["incarnation"]))
            return
        if "error" in answer:
            future.set_exception(ERRORS.get(answer["error"], RuntimeError)(answer["message"]))
            return
        result = TypeAdapter(RESULTS[op]).validate_python(answer["result"])
        if op == "optim_step":
            run.step = int(result.get("step", run.step + 1))
        elif op == "save_state":
            run.saved, run.saved_step = result, run.step
        future.set_result(result)

    def _replaced(self, failed: RemoteRun, worker: Worker, incarnation: str | None) -> WorkerLostError:
        """The error for a call that met a dead worker, once its runs are back on the replacement."""
        with self._lock:
            incarnation = incarnation or self._replacement(worker)
            if incarnation != worker.incarnation:  # the first call to see this death puts the runs back
                self._put_back(worker, incarnation)
        where = f"from its last saved state {failed.saved} (step {failed.saved_step})" if failed.saved else "afresh (it had no saved state)"
        return WorkerLostError(f"the training worker for {failed.info.base_model} died and was replaced: run {failed.model_id} resumed {where}; repeat the calls made since")

    def _replacement(self, worker: Worker, wait_s: float = RESTART_WAIT_S) -> str:
        """The incarnation of the worker Ray starts in place of a dead one, once it is up."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return self.ray.get(worker.handle.current.remote())
            except self.ray.exceptions.ActorUnavailableError:  # still restarting
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    def _put_back(self, worker: Worker, incarnation: str) -> None:
        """Each of the worker's runs on its replacement ``incarnation``: created again, then its last saved state loaded."""
        for model_id in worker.runs:
            run = self._remote[model_id]
            self.ray.get(worker.handle.create_model.remote(run.request.model_dump_json(), model_id))
            if run.saved is not None:
                restore = LoadStateRequest(model_id=model_id, path=run.saved, with_optimizer=True)
                self.ray.get(worker.handle.call.remote("load_state", restore.model_dump_json()))
            run.step = run.saved_step if run.saved else 0
        worker.incarnation = incarnation

    def close(self) -> None:
        self._settling.shutdown(wait=False, cancel_futures=True)
        self.ray.shutdown()
