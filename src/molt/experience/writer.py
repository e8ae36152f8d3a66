"""One background thread writes everything the proxy keeps, so a turn never waits on the database.

A turn only puts a write on a bounded queue. When the queue is full the turn waits for room
(back-pressure: a slow database slows the proxy down instead of growing its memory), never for
the write itself. The thread writes in batches, one transaction each; a batch that fails is
retried write by write, so one bad row loses only itself. ``close`` writes everything accepted
before it returns, so a clean stop loses nothing.
"""

import asyncio
import logging
import queue
import threading
from collections.abc import Callable

from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from molt.registry.database import for_writing

log = logging.getLogger("molt.experience")

Write = Callable[[Session], None]
STOP = object()


class Barrier:
    """Set once every write enqueued before it is committed (``flush``)."""

    def __init__(self) -> None:
        self.done = threading.Event()


class BackgroundWriter:
    def __init__(self, engine: Engine, capacity: int = 10_000, batch: int = 256, after_batch: Callable[[Session, int], None] | None = None):
        """``after_batch(session, written_so_far)`` runs after each batch, in its own transaction (retention)."""
        self.queue: queue.Queue = queue.Queue(maxsize=capacity)
        self.batch, self.after_batch = batch, after_batch
        self.session = sessionmaker(for_writing(engine))
        self.written = self.failed = 0
        self.closed = False
        self.thread = threading.Thread(target=self._run, name="molt-writer", daemon=True)
        self.thread.start()

    def submit_nowait(self, write: Write) -> bool:
        """Enqueue ``write`` unless the queue is full; after ``close`` nothing is accepted."""
        if self.closed:
            return False
        try:
            self.queue.put_nowait(write)
            return True
        except queue.Full:
            return False

    async def submit(self, write: Write | Barrier) -> None:
        """Enqueue ``write``; when the queue is full, wait (off the event loop) for room."""
        if not self.submit_nowait(write) and not self.closed:
            await asyncio.to_thread(self.queue.put, write)

    def flush(self) -> None:
        """Block until everything enqueued so far is committed (later writes are not waited for)."""
        if self.closed:
            return
        barrier = Barrier()
        self.queue.put(barrier)
        barrier.done.wait()

    async def aflush(self) -> None:
        if self.closed:
            return
        barrier = Barrier()
        await self.submit(barrier)
        await asyncio.to_thread(barrier.done.wait)

    def close(self) -> None:
        """Write everything accepted, then stop the thread."""
        if self.thread.is_alive():
            self.closed = True
            self.queue.put(STOP)
            self.thread.join()

    def _run(self) -> None:
        while True:
            items = [self.queue.get()]
            while len(items) < self.batch:
                try:
                    items.append(self.queue.get_nowait())
                except queue.Empty:
                    break
            writes = [item for item in items if item is not STOP and not isinstance(item, Barrier)]
            self._write(writes)
            for item in items:
                if isinstance(item, Barrier):
                    item.done.set()
            if STOP in items:
                return

    def _write(self, writes: list[Write]) -> None:
        if not writes:
            return
        try:
            with self.session.begin() as session:
                for write in writes:
                    write(session)
        except Exception:  # noqa: BLE001 — one bad write must not lose the batch
            for write in writes:
                try:
                    with self.session.begin() as session:
                        write(session)
                except Exception as e:  # noqa: BLE001
                    self.failed += 1
                    self.written -= 1
                    log.error("a write to the proxy's database failed and was dropped: %s", e)
        self.written += len(writes)
        if self.after_batch is not None:
            try:
                with self.session.begin() as session:
                    self.after_batch(session, self.written)
            except Exception as e:  # noqa: BLE001
                log.error("retention pruning failed: %s", e)
