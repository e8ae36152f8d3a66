"""Runs ``LLMEngine.step()`` on one background thread and streams outputs to asyncio callers.

A request that stops being consumed (client disconnect, cancellation) is aborted in the engine,
which frees its cache slot at the start of the next step.
"""

import asyncio
import logging
import threading
from collections.abc import AsyncIterator

from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.engine.sequence import SequenceOutput

log = logging.getLogger("molt.engine")


class EngineDeadError(RuntimeError):
    """The engine loop failed; the request could not be completed."""


class AsyncEngine:
    def __init__(self, engine: LLMEngine):
        self.engine = engine
        self._queues: dict[str, asyncio.Queue] = {}
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.Thread(target=self._run, name="molt-engine", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stopped.is_set():
            if not self.engine.has_work():
                self._wake.wait(0.1)
                self._wake.clear()
                continue
            try:
                outputs = self.engine.step()
            except Exception as e:  # keep serving: fail the requests in flight, not the process
                log.exception("engine step failed")
                self._fail_all(e)
                continue
            for output in outputs:
                self._loop.call_soon_threadsafe(self._deliver, output.request_id, output)

    def _deliver(self, request_id: str, item: SequenceOutput | Exception) -> None:
        queue = self._queues.get(request_id)
        if queue is not None:
            queue.put_nowait(item)

    def _fail_all(self, error: Exception) -> None:
        for request_id in list(self._queues):
            self.engine.abort(request_id)
            self._loop.call_soon_threadsafe(self._deliver, request_id, EngineDeadError(f"engine step failed: {error}"))

    async def generate(
        self, request_id: str, prompt_ids: list[int], params: SamplingParams, adapter: str | None = None
    ) -> AsyncIterator[SequenceOutput]:
        """Outputs of every sample of one request as they are produced. Raises RequestError or
        AdapterNotFound before the first output if the engine refuses the request."""
        queue: asyncio.Queue = asyncio.Queue()
        self._queues[request_id] = queue
        remaining = params.n
        try:
            self.engine.add_request(request_id, prompt_ids, params, adapter)
            self._wake.set()
            while remaining:
                item = await queue.get()
                if isinstance(item, Exception):
                    raise item
                if item.finished:
                    remaining -= 1
                yield item
        finally:
            self._queues.pop(request_id, None)
            if remaining:
                self.engine.abort(request_id)
                self._wake.set()
