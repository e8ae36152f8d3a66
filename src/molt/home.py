"""Where molt keeps what it builds on this machine (converted models, tokenizers).

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
        try:
            os.replace(tmp, final)
        except OSError:
            if not final.is_dir():  # a concurrent build that finished first is fine
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return True


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
