"""The sessions of a server: one per conversation, each in its own workspace under one root."""

import hashlib
import shutil
import tempfile
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from molt.harness.substrate.isolation import Isolation, Limits, isolation
from molt.harness.substrate.session import HostCall, Outcome, Session, no_host


class Substrate:
    def __init__(
        self, root: Path, limits: Limits = Limits(), host: Callable[[str], HostCall] = lambda key: no_host,
        preload: Callable[[], list[tuple[str, str]]] = list, max_sessions: int = 16, iso: Isolation | None = None,
    ):
        """``host(key)`` serves the host calls of conversation ``key``'s code; ``preload`` gives
        the promoted tools every session starts with. Past ``max_sessions`` live processes, the
        least recently used one stops (its workspace stays; its variables go)."""
        self.root, self.limits, self.host, self.preload, self.max_sessions = root, limits, host, preload, max_sessions
        self.iso = iso or isolation()
        self.sessions: OrderedDict[str, Session] = OrderedDict()
        self.lock = threading.Lock()

    def workspace(self, key: str) -> Path:
        """A conversation's workspace: named by a hash of its key, so no key can name a path."""
        return self.root / hashlib.sha256(key.encode()).hexdigest()[:24]

    def session(self, key: str) -> Session:
        with self.lock:
            session = self.sessions.pop(key, None)
            if session is None:
                session = Session(self.workspace(key), self.limits, self.host(key), self.preload, self.iso)
            self.sessions[key] = session
            evicted = [self.sessions.popitem(last=False)[1] for _ in range(len(self.sessions) - self.max_sessions)]
        for oldest in evicted:  # outside the lock: closing waits for a run in progress
            oldest.close()
        return session

    def run(self, key: str, code: str) -> Outcome:
        return self.session(key).run(code)

    def branch(self, source: str, key: str) -> Session:
        """A branched conversation's own copy of ``source``'s session: its files and JSON-safe variables."""
        with tempfile.TemporaryDirectory(prefix="molt-branch-") as folder:
            self.session(source).snapshot(Path(folder))
            target = self.session(key)
            target.restore(Path(folder))
        return target

    def drop(self, key: str) -> None:
        """End a conversation's session and remove its workspace."""
        with self.lock:
            session = self.sessions.pop(key, None)
        if session is not None:
            session.close()
        shutil.rmtree(self.workspace(key), ignore_errors=True)

    def close(self) -> None:
        with self.lock:
            sessions, self.sessions = list(self.sessions.values()), OrderedDict()
        for session in sessions:
            session.close()
