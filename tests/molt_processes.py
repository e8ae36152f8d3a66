"""Helpers for tests that run molt (or a service it needs) as a real process on a free port."""

import subprocess
import sys
import time

import httpx

from molt.registry.local_postgres import free_port  # noqa: F401 — the tests import it from here


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


def start_mint(port: int, *options: str) -> subprocess.Popen:
    """``molt mint serve`` on the tiny model (float32) at ``port``, healthy."""
    command = [sys.executable, "-m", "molt", "mint", "serve", "--base", "tiny", "--dtype", "float32", "--port", str(port), *options]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if wait_until_healthy(server, port):
        return server
    if server.poll() is not None:
        raise RuntimeError(f"molt mint serve exited: {server.stderr.read()}")
    server.kill()
    raise RuntimeError("molt mint serve did not start in 120 s")
