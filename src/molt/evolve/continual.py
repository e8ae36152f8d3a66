"""Continual mode for ``molt up``: follow ``production`` while serving, and learn in the background.

``ProductionWatcher`` polls the registry's ``production`` alias. When it moves (a generation
promoted its candidate, or ``molt registry rollback`` moved it back), the new pair's adapters are
loaded into the running engine under names made from their revisions, then the proxy switches to
the pair: turns already planned finish with the pair that planned them, new turns get the new
one, and the experience log names the pair of each turn. Nothing is unloaded, so no request in
flight loses its adapter (a rollback finds the old one still loaded).

``LearningWorker`` counts the turns logged since the last generation started and, past the HCP's
``[learning] min_new_turns``, runs ``molt evolve --generations 1`` as a separate process at the
lowest CPU priority, so serving keeps the cores it needs; the watcher takes it from there.
"""

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import sessionmaker

from molt.engine.adapter_client import serve_specialists
from molt.hcp import HCP
from molt.hcp.v1 import Learning
from molt.home import molt_home, write_atomic
from molt.proxy.service import ProxyService
from molt.registry import Registry
from molt.registry.database import open_database
from molt.registry.pairs import PRODUCTION, by_revision, pair_hcp
from molt.registry.schema import ExperienceTurn
from molt.stack import with_engine


def served_pair(registry: Registry, pair: str, engine_url: str, kind: str = "molt") -> HCP:
    """The HCP a running stack serves ``pair`` with: adapters named by revision, the stack's engine."""
    return with_engine(by_revision(pair_hcp(registry, pair)), engine_url, kind)


class ProductionWatcher:
    def __init__(self, service: ProxyService, db: str | None, poll_s: float, log: Callable[[str], None] = print):
        self.service, self.db, self.poll_s, self.log = service, db, poll_s, log
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, name="molt-production-watcher", daemon=True)

    def start(self) -> "ProductionWatcher":
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def run(self) -> None:
        registry = Registry(self.db)
        try:
            while not self.stop.wait(self.poll_s):
                try:
                    self.check(registry)
                except Exception as e:  # serving goes on with the pair it has
                    self.log(f"could not follow production: {e}")
        finally:
            registry.close()

    def check(self, registry: Registry) -> bool:
        """Swap to ``production`` when it moved; True when it did."""
        moved = registry.resolve_alias(PRODUCTION)
        if moved is None or moved[0] == self.service.loop.pair:
            return False
        pair, move = moved
        hcp = served_pair(registry, pair, self.service.hcp.model.engine_url, self.service.hcp.model.engine_kind)
        serve_specialists(hcp)  # adapters are named by revision, so the incumbent's stay served for turns in flight
        self.service.switch_to(hcp, pair=pair)
        self.log(f"now serving pair {pair} ({move.actor}: {move.reason})")
        return True


def learning_state(target: str) -> Path:
    return molt_home() / "evolve" / target / "learning.json"


class LearningWorker:
    def __init__(self, settings: Learning, db: str | None, log: Callable[[str], None] = print, command: list[str] | None = None):
        """``command``: what runs a generation (default ``molt evolve --target T --generations 1``)."""
        self.settings, self.db, self.log = settings, db, log
        self.command = command or [sys.executable, "-m", "molt", "evolve", "--target", settings.target, "--generations", "1"]
        if settings.contract:
            self.command += ["--contract", settings.contract]
        if db:
            self.command += ["--db", db]
        self.stop = threading.Event()
        self.process: subprocess.Popen | None = None
        self.thread = threading.Thread(target=self.run, name="molt-learning-worker", daemon=True)

    def start(self) -> "LearningWorker":
        self.thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # the generation resumes from its last finished phase next time
        self.thread.join(timeout=10)

    def since(self) -> datetime:
        """When the last generation started (first start: now; earlier traffic is not counted twice)."""
        path = learning_state(self.settings.target)
        if path.is_file():
            return datetime.fromisoformat(json.loads(path.read_text(encoding="utf-8"))["since"])
        return self.mark()

    def mark(self) -> datetime:
        now = datetime.now(timezone.utc)
        path = learning_state(self.settings.target)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps({"since": now.isoformat()}))
        return now

    def new_turns(self, since: datetime) -> int:
        engine = open_database(self.db)
        try:
            with sessionmaker(engine)() as session:
                return session.scalar(select(func.count()).select_from(ExperienceTurn).where(ExperienceTurn.at >= since)) or 0
        finally:
            engine.dispose()

    def run(self) -> None:
        since = self.since()
        while not self.stop.wait(self.settings.poll_s):
            try:
                count = self.new_turns(since)
            except Exception as e:
                self.log(f"learning worker: cannot count new turns: {e}")
                continue
            if count < self.settings.min_new_turns:
                continue
            since = self.mark()
            self.log(f"learning: {count} new turns; a generation for {self.settings.target} starts (lowest CPU priority)")
            output = learning_state(self.settings.target).with_name("worker.log")
            with output.open("ab") as sink:
                self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=sink, stderr=sink, preexec_fn=lambda: os.nice(19))
                code = self.process.wait()
            self.log("learning: the generation finished" if code == 0 else f"learning: the generation stopped (exit {code}); its output is in {output}")
