"""The content-addressed store: each registered folder (an adapter revision, a router, a dataset)
lives at ``<root>/<sha256 of its files>``, written whole or not at all (``build_once``).

The root is inside the engine's adapters root (``$MOLT_HOME/adapters/store``), so the engine
serves a stored revision by its relative path ``store/<hash>``. Files are written before the
registry's row is committed, so a record never points at a missing folder; a crash in between
leaves only an orphan folder, which ``molt registry gc`` removes.
"""

import hashlib
import os
import shutil
import time
from pathlib import Path

from molt.home import build_once, molt_home


def store_root() -> Path:
    return molt_home() / "adapters" / "store"


def folder_hash(folder: Path) -> str:
    """sha256 over the sorted relative paths and contents of every file in ``folder``."""
    digest = hashlib.sha256()
    for file in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(file.relative_to(folder).as_posix().encode() + b"\0")
        with open(file, "rb") as handle:
            digest.update(hashlib.file_digest(handle, "sha256").digest())
    return digest.hexdigest()


class ContentStore:
    def __init__(self, root: Path | None = None):
        self.root = root or store_root()

    def path(self, content_hash: str) -> Path:
        return self.root / content_hash

    def put(self, source: Path, files: list[str] | None = None) -> str:
        """Copy ``source`` (a folder, or only the named ``files`` of it) into the store; its hash."""
        if not source.is_dir():
            raise FileNotFoundError(f"{source} is not a folder")
        names = files or [p.relative_to(source).as_posix() for p in source.rglob("*") if p.is_file()]
        staging = self.root / f".staging-{os.getpid()}-{time.monotonic_ns()}"
        try:
            for name in names:
                (staging / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / name, staging / name)
            content_hash = folder_hash(staging)
            if not build_once(self.path(content_hash), lambda tmp: shutil.copytree(staging, tmp, dirs_exist_ok=True)):
                os.utime(self.path(content_hash))  # reused: young again, so a concurrent gc leaves it alone
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return content_hash

    def put_file(self, source: Path, name: str) -> str:
        """A single file, stored as a folder holding it under ``name``."""
        staging = self.root / f".file-{os.getpid()}-{time.monotonic_ns()}"
        staging.mkdir(parents=True)
        try:
            shutil.copy2(source, staging / name)
            return self.put(staging)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def hashes(self) -> set[str]:
        return {p.name for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")} if self.root.is_dir() else set()

    def remove_unreferenced(self, referenced: set[str], min_age_s: float) -> list[Path]:
        """Delete stored folders no record names (and leftover staging folders) older than ``min_age_s``."""
        removed = []
        if not self.root.is_dir():
            return removed
        now = time.time()
        for path in self.root.iterdir():
            if path.name in referenced or now - path.stat().st_mtime < min_age_s:
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        return removed
