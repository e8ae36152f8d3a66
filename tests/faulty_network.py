"""A faulty network between a client and a server, for tests: an HTTP/1.1 relay on a free port
that forwards each request to ``upstream`` and injects the faults it is told to, by route and by
occurrence (the n-th request to that route):

- ``reset``: the request reaches the server, the connection is reset before the reply (the
  client cannot tell whether its call ran);
- ``drop``: the connection is reset before the request is forwarded (it never ran);
- ``timeout``: the request reaches the server, the reply is held past ``hold_s``;
- ``duplicate``: the request is delivered twice, the client gets the second reply.

``fired`` lists the faults injected, so a test can check that each really happened.
"""

import asyncio
import socket
import struct
import threading
from collections import Counter
from dataclasses import dataclass, field

import httpx

from molt_processes import free_port

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding", "host"}


@dataclass
class Fault:
    route: str
    occurrence: int
    kind: str  # reset | drop | timeout | duplicate


@dataclass
class FaultyRelay:
    upstream: str
    faults: list[Fault]
    hold_s: float = 30.0
    port: int = field(default_factory=free_port)
    fired: list[Fault] = field(default_factory=list)
    seen: Counter = field(default_factory=Counter)
    """Requests per route that reached the relay."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "FaultyRelay":
        self._ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._serve(),), daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        async with httpx.AsyncClient(base_url=self.upstream, timeout=None) as self._client:
            server = await asyncio.start_server(self._connection, "127.0.0.1", self.port)
            self._ready.set()
            async with server:
                await self._stop.wait()

    def _fault(self, route: str) -> str | None:
        self.seen[route] += 1
        for fault in self.faults:
            if route.endswith(fault.route) and fault.occurrence == self.seen[route]:
                self.fired.append(fault)
                return fault.kind
        return None

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = dict(line.split(": ", 1) for line in lines[1:] if ": " in line)
                length = int(next((v for k, v in headers.items() if k.lower() == "content-length"), "0"))
                body = await reader.readexactly(length) if length else b""
                kind = self._fault(target)
                if kind == "drop":
                    return reset(writer)
                forward = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
                reply = await self._client.request(method, target, content=body, headers=forward)
                if kind == "duplicate":
                    reply = await self._client.request(method, target, content=body, headers=forward)
                if kind == "reset":
                    return reset(writer)
                if kind == "timeout":
                    await asyncio.sleep(self.hold_s)
                    return reset(writer)
                kept = [(k, v) for k, v in reply.headers.items() if k.lower() not in HOP_HEADERS]
                status = f"HTTP/1.1 {reply.status_code} {reply.reason_phrase}\r\n"
                writer.write((status + "".join(f"{k}: {v}\r\n" for k, v in kept) + f"content-length: {len(reply.content)}\r\n\r\n").encode("latin-1") + reply.content)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):  # the client left, or the relay stops
            writer.close()


def reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP RST (SO_LINGER 0), as a dropped link or a killed middlebox does."""
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
