"""How a sandboxed process starts: Linux namespaces through bubblewrap, or rlimits alone.

``bubblewrap`` (used whenever ``bwrap`` works here):

- **files:** a new mount namespace holding only /usr (and the /bin, /lib links into it), the Python
  installation, the workspace (read-write, at /workspace), a private size-capped /tmp, its own
  /proc and a minimal /dev. /etc, home folders, the project and ``MOLT_HOME`` are not there;
- **network:** an empty network namespace: no route to the host's 127.0.0.1 nor anywhere else;
- **processes:** its own pid, IPC and UTS namespaces: it sees and signals only its own processes;
- **user:** as root, each session runs under an unprivileged uid of its own with no capabilities
  and ``no_new_privs``; otherwise inside a user namespace as the calling user.

``rlimits`` (the fallback where namespaces are unavailable): the limits below, a process group of
its own, the workspace as working directory, and — as root, when the interpreter is readable by
others — a uid of its own. Files outside the workspace and the network are *not* fenced off:
``molt doctor`` says which mode is active.

Both modes: ``RLIMIT_AS`` (memory) and ``RLIMIT_CPU`` (CPU seconds), each per process,
``RLIMIT_NPROC`` (processes: counted per uid, hence a uid per session), ``RLIMIT_FSIZE`` (largest
file) and ``RLIMIT_NOFILE``; the session enforces the wall clock and the output size.
"""

import functools
import itertools
import os
import resource
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

INSIDE = "/workspace"
UID_BASE = 200_000
"""Sandbox uids (as root): far above any real account; one per live session."""


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 60
    """CPU seconds per process over its life (the session's own process then dies and is restarted)."""
    memory_bytes: int = 1 << 30
    processes: int = 32
    wall_s: float = 10.0
    """Wall-clock seconds per run."""
    output_bytes: int = 64 * 1024
    file_bytes: int = 64 << 20
    tmp_bytes: int = 64 << 20
    open_files: int = 256


@dataclass(frozen=True)
class Isolation:
    mode: str
    """``bubblewrap`` or ``rlimits``."""
    separate_user: bool
    why: str = ""
    """Why the fallback is active (bubblewrap missing or refused)."""

    def describe(self) -> str:
        if self.mode == "bubblewrap":
            user = "a uid of its own per session" if self.separate_user else "a user namespace"
            return f"bubblewrap: mount, network, pid, IPC and UTS namespaces, {user}, rlimits"
        user = "a uid of its own per session" if self.separate_user else "the server's own user"
        return f"rlimits only ({self.why}): limits, process group, workspace cwd, {user}; files outside the workspace and the network are NOT fenced off"


def interpreter() -> tuple[str, Path]:
    """The real Python executable (not a virtual environment's link) and its installation prefix."""
    return os.path.realpath(sys.executable), Path(sys.base_prefix).resolve()


def readable_by_others(path: str) -> bool:
    parts = Path(path).parents
    return all(os.stat(p).st_mode & 0o001 for p in parts) and bool(os.stat(path).st_mode & 0o004)


@functools.cache
def isolation() -> Isolation:
    """The strongest mode that works here (``MOLT_SANDBOX=rlimits`` forces the fallback)."""
    root = os.geteuid() == 0

    def fallback(why: str) -> Isolation:
        return Isolation("rlimits", root and readable_by_others(interpreter()[0]), why)

    if os.environ.get("MOLT_SANDBOX") == "rlimits":
        return fallback("MOLT_SANDBOX=rlimits")
    if shutil.which("bwrap") is None:
        return fallback("bwrap is not installed (Debian package bubblewrap)")
    probe = Isolation("bubblewrap", root)
    argv, env, setup = command(probe, [interpreter()[0], "-I", "-c", "pass"], Path("/"), uid=UID_BASE, limits=Limits(), mounted=False)
    try:
        done = subprocess.run(argv, env=env, preexec_fn=setup, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return Isolation("rlimits", False, f"bwrap failed to start: {e}")
    if done.returncode != 0:
        return fallback(f"bwrap refused: {done.stderr.strip()[:200]}")
    return probe


_uids = itertools.count()
_uid_lock = threading.Lock()


def next_uid() -> int:
    """A sandbox uid no other live session of this process holds (processes are counted per uid)."""
    with _uid_lock:
        return UID_BASE + (os.getpid() % 4096) * 256 + next(_uids) % 256


def command(iso: Isolation, argv: list[str], workspace: Path, uid: int, limits: Limits, mounted: bool = True) -> tuple[list[str], dict, Callable[[], None]]:
    """``argv`` run under ``iso``: the command line, its environment and what runs before exec."""
    inside = INSIDE if iso.mode == "bubblewrap" else str(workspace)
    tmp = "/tmp" if iso.mode == "bubblewrap" else str(workspace / ".tmp")
    env = {"HOME": inside, "TMPDIR": tmp, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "MOLT_OUTPUT_BYTES": str(limits.output_bytes)}
    drop = iso.separate_user
    if iso.mode == "bubblewrap":
        env["MOLT_REAP"] = "1"
        argv = bubblewrap(argv, workspace if mounted else None, uid if drop else None, limits)
        drop = False  # setpriv inside drops it, after the mounts are made
    else:
        os.makedirs(tmp, exist_ok=True)
        if drop:
            os.chown(tmp, uid, uid)

    processes = limits.processes if iso.separate_user else own_tasks() + limits.processes

    def setup() -> None:
        for which, value in (
            (resource.RLIMIT_AS, limits.memory_bytes), (resource.RLIMIT_CPU, limits.cpu_s), (resource.RLIMIT_NPROC, processes),
            (resource.RLIMIT_FSIZE, limits.file_bytes), (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_CORE, 0),
        ):
            # CPU: the soft limit sends SIGXCPU (told to the model as such), the hard one kills
            resource.setrlimit(which, (value, value + 1 if which == resource.RLIMIT_CPU else value))
        if drop:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

    return argv, env, setup


def bubblewrap(argv: list[str], workspace: Path | None, uid: int | None, limits: Limits) -> list[str]:
    executable, prefix = interpreter()
    line = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try"]
    line += ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64"):
        if os.path.islink(top):
            line += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            line += ["--ro-bind", top, top]
    if not prefix.is_relative_to("/usr"):
        line += ["--ro-bind", str(prefix), str(prefix)]
    if not Path(executable).is_relative_to(prefix) and not Path(executable).is_relative_to("/usr"):
        line += ["--ro-bind", executable, executable]
    if workspace is not None:
        line += ["--bind", str(workspace), INSIDE]
    line += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp", "--chdir", INSIDE if workspace else "/"]
    if uid is None:
        return [*line, "--unshare-user", "--", *argv]
    # root: keep only the two capabilities setpriv needs to become the sandbox uid, which drops them
    line += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
    return [*line, "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", *argv]


def own_tasks() -> int:
    """Tasks (threads) this uid runs now: RLIMIT_NPROC counts them all, so an unprivileged sandbox
    gets its limit on top of them."""
    me, count = os.getuid(), 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == me:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count
