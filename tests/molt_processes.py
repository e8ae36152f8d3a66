"""Helpers for tests that run molt (or a service it needs) as a real process on a free port."""

import socket
import subprocess
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_healthy(process: subprocess.Popen, port: int, seconds: float = 120) -> bool:
    """True once ``http://127.0.0.1:PORT/health`` answers 200; False when the process exits or
    ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return True
        except httpx.TransportError:
            time.sleep(0.2)
    return False
