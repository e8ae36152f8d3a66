"""What the proxy admits: a request size cap (enforced by ``molt.http_api.Guard``), bounded in-flight and queued turns."""

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    max_request_bytes: int = 1 << 20
    """Larger bodies are refused with 413 before they are parsed."""
    max_in_flight: int = 8
    """Turns running at once; more wait in the queue."""
    max_queued: int = 32
    """Turns waiting for a slot; beyond this, 429."""


class Overloaded(Exception):
    """Every slot is busy and the queue is full."""


class Admission:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.slots = asyncio.Semaphore(limits.max_in_flight)
        self.waiting = self.in_flight = 0

    @asynccontextmanager
    async def turn(self):
        if self.slots.locked() and self.waiting >= self.limits.max_queued:
            raise Overloaded(f"{self.limits.max_in_flight} turns running and {self.waiting} queued; retry later")
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        self.in_flight += 1
        try:
            yield
        finally:
            self.in_flight -= 1
            self.slots.release()
