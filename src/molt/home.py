"""Where molt keeps what it builds on this machine (converted models, tokenizers), and how it
writes there: every file and folder appears whole or not at all (temp + fsync + rename), so a
crash or a full disk never leaves a half-written HCP, router or checkpoint behind.

The location is a machine fact, so it comes from the environment: ``$MOLT_HOME``, else
``~/.cache/molt``. Nothing here is downloaded; everything is derived from local files.
"""

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def molt_home() -> Path:
    """The root of molt's cache, created on first use."""
    home = Path(os.environ.get("MOLT_HOME") or Path.home() / ".cache" / "molt").expanduser()
    home.mkdir(parents=True, exist_ok=True)
    return home


def cache_dir(kind: str) -> Path:
    """A sub-folder of the cache for one kind of artefact, e.g. ``models``."""
    path = molt_home() / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_once(final: Path, build: Callable[[Path], None]) -> bool:
    """Create the folder ``final`` by calling ``build(tmp)`` on a fresh temporary folder and
    renaming it into place. Returns False when ``final`` already existed (nothing was built).

    An interrupted build leaves only a ``.<name>.tmp-<pid>`` folder, which is never taken for
    the real thing and is removed by the next build once its process is gone.
    """
    if final.is_dir():
        return False
    _remove_stale_builds(final)
    tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        build(tmp)
        fsync_tree(tmp)
        try:
            os.replace(tmp, final)
        except OSError:
            if not final.is_dir():  # a concurrent build that finished first is fine
                raise
        fsync_dir(final.parent)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


def replace_folder(final: Path, build: Callable[[Path], None]) -> Path:
    """Like ``build_once``, but a folder already at ``final`` is replaced by the new build (the
    old one stays whole until the new one is complete)."""
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.is_dir():
        _remove_stale_builds(final)
        tmp = final.parent / f".{final.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        try:
            build(tmp)
            fsync_tree(tmp)
            os.replace(final, old)
            os.replace(tmp, final)
            fsync_dir(final.parent)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.rmtree(old, ignore_errors=True)
    else:
        build_once(final, build)
    return final


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Write ``path`` whole or not at all: a temporary file beside it, fsynced, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.parent / f".{path.name}.tmp-{os.getpid()}"
    try:
        with open(tmp, "wb") as file:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return path


def fsync_tree(folder: Path) -> None:
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb") as handle:
                os.fsync(handle.fileno())
    fsync_dir(folder)


def fsync_dir(folder: Path) -> None:
    """Make a rename in ``folder`` durable (POSIX: fsync the directory itself)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _remove_stale_builds(final: Path) -> None:
    for stale in final.parent.glob(f".{final.name}.tmp-*"):
        pid = stale.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _process_alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
