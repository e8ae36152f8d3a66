"""One program run to its end in a fresh sandbox: how scorers and RL environments run model code."""

import shutil
import subprocess
import tempfile
from pathlib import Path

from molt.harness.substrate.isolation import Limits, command, interpreter, isolation, next_uid
from molt.harness.substrate.session import own


def run_program(files: dict[str, str], script: str, stdin: str = "", limits: Limits = Limits()) -> subprocess.CompletedProcess | None:
    """Write ``files`` into a fresh workspace and run ``python -I script`` there under the active
    isolation; None when it passed the wall clock (the whole sandbox is killed)."""
    iso, uid = isolation(), next_uid()
    folder = Path(tempfile.mkdtemp(prefix="molt-run-"))
    try:
        for name, text in files.items():
            (folder / name).write_text(text, encoding="utf-8")
        if iso.separate_user:
            own(folder, uid)
        argv, env, setup = command(iso, [interpreter()[0], "-I", script], folder, uid, limits)
        try:
            return subprocess.run(argv, env=env, cwd=folder, input=stdin, capture_output=True, text=True, timeout=limits.wall_s, preexec_fn=setup, start_new_session=True)
        except subprocess.TimeoutExpired:
            return None
    finally:
        shutil.rmtree(folder, ignore_errors=True)
