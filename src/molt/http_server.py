"""Run an ASGI app with uvicorn in the foreground, or on a background thread (tests, ``molt up``)."""

import socket
import threading
import time

import uvicorn


class ServerThread:
    """``with ServerThread(app) as url:`` serves ``app`` on 127.0.0.1 at a free port until the block ends."""

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, port))
        self.host, self.port = host, self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 120
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.sock.close()


def serve(app, host: str, port: int, log_level: str = "info") -> None:
    uvicorn.run(app, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5)
