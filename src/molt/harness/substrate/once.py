"""One program run to its end in a fresh sandbox: how scorers and RL environments run model code."""

import os
import shutil
import signal
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
        process = subprocess.Popen(argv, env=env, cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=setup, start_new_session=True)
        try:
            stdout, stderr = process.communicate(stdin, timeout=limits.wall_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)  # the whole group (bubblewrap's pid namespace dies with it)
            process.communicate()
            return None
        return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
