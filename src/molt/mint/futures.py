"""Futures as Tinker returns them: ``.result()`` blocks, ``await .result_async()`` does not.

Work for one backend runs on a single worker thread, so requests execute in submission order
(a ``forward_backward`` submitted before an ``optim_step`` is always applied first), exactly the
ordering guarantee Tinker gives.
"""

import asyncio
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")


class APIFuture(Generic[T]):
    def __init__(self, future: Future):
        self._future = future

    def result(self, timeout: float | None = None) -> T:
        return self._future.result(timeout)

    async def result_async(self) -> T:
        return await asyncio.wrap_future(self._future)

    def done(self) -> bool:
        return self._future.done()


class OrderedWorker:
    """One thread that runs submitted calls in order."""

    def __init__(self, name: str):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=name)
        self._pending: set[Future] = set()

    @property
    def pending(self) -> int:
        """Calls submitted and not finished yet."""
        return len(self._pending)

    def submit(self, fn, *args, **kwargs) -> APIFuture:
        future = self._executor.submit(fn, *args, **kwargs)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return APIFuture(future)
