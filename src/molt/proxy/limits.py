"""What the proxy admits: a request size cap (enforced by ``molt.http_api.Guard``), bounded
in-flight and queued turns, and a bound per client, so one client cannot fill the queue for all."""

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
    max_per_client: int = 8
    """Turns one client may have running or waiting at once; beyond this, 429 for that client only."""


class Overloaded(Exception):
    """Every slot is busy and the queue is full."""


class Admission:
    def __init__(self, limits: Limits):
        self.limits = limits
        self.slots = asyncio.Semaphore(limits.max_in_flight)
        self.waiting = self.in_flight = 0
        self.by_client: dict[str, int] = {}
        """Turns running or waiting per client; a client leaves the map with its last turn."""

    @asynccontextmanager
    async def turn(self, client: str = ""):
        held = self.by_client.get(client, 0)
        if held >= self.limits.max_per_client:
            raise Overloaded(f"this client has {held} turns running or queued (at most {self.limits.max_per_client}); retry later")
        if self.slots.locked() and self.waiting >= self.limits.max_queued:
            raise Overloaded(f"{self.limits.max_in_flight} turns running and {self.waiting} queued; retry later")
        self.by_client[client] = held + 1
        try:
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
        finally:
            left = self.by_client.pop(client) - 1
            if left:
                self.by_client[client] = left
