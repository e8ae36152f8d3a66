"""One persistent sandboxed Python process: its variables live across runs, its files in a workspace.

A run that passes the wall clock, a session that dies (CPU limit, a crash, ``os._exit``) or that
breaks the line protocol is killed and started again at once; the run's outcome says so, which
is how the model learns that its variables are gone (the workspace's files are kept).
"""

import json
import logging
import os
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from molt.harness.substrate.isolation import Isolation, Limits, command, interpreter, isolation, next_uid

CHILD = (Path(__file__).parent / "child.py").read_text(encoding="utf-8")
PROTOCOL_BYTES = 16 << 20
"""The most one protocol line may hold (a snapshot's variables); more is a broken session."""
RESTARTED = "[the session was restarted: its variables are gone; files in the workspace are kept]"
IDLE_STOPPED = "[the session was stopped while idle and started again: its variables are gone; files in the workspace are kept]"
MAX_HOST_CALLS = 200
"""Tool calls one run may make; more get an error (a loop cannot hammer a service)."""
HOST_TIME_FACTOR = 5
log = logging.getLogger("molt.harness")

HostCall = Callable[[str, dict], Any]
"""What the session's code asks of the host: ``(op, fields) → result``; raise ``ToolCallError``
to send an error back. Ops: ``call`` (a tool proxy), ``save_tool``, ``promote_tool``, ``tool_failed``."""


class SessionError(RuntimeError):
    """The session could not be started (the sandbox refused), or a request it cannot serve."""


class ToolCallError(Exception):
    """A host call that failed: its message goes back to the code that made it."""


@dataclass(frozen=True)
class Outcome:
    output: str
    value: str | None = None
    error: str | None = None
    restarted: bool = False
    seconds: float = 0.0

    def text(self) -> str:
        """What the model is shown."""
        parts = [self.output.rstrip()] if self.output.strip() else []
        parts += [self.value] if self.value is not None else []
        parts += [f"Error: {self.error}"] if self.error else []
        return "\n".join(parts) or "(no output)"


class Died(Exception):
    """The child is gone or unusable: why, in words for the model."""


def no_host(op: str, fields: dict) -> Any:
    raise ToolCallError("this session has no tools")


class Session:
    def __init__(
        self, workspace: Path, limits: Limits = Limits(), host: HostCall = no_host,
        preload: Callable[[], list[tuple[str, str]]] = list, iso: Isolation | None = None,
    ):
        """``preload`` gives the promoted tools ``(name, code)`` defined at every (re)start."""
        self.workspace, self.limits, self.host, self.preload = workspace, limits, host, preload
        self.iso = iso or isolation()
        self.uid = next_uid()
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()
        self.buffer = b""
        self.started = False
        """Whether it ever ran: a session with no process that ran before was stopped, and says so."""

    # -- life ------------------------------------------------------------------------------------
    def start(self) -> None:
        self.workspace.mkdir(parents=True, exist_ok=True)
        if self.iso.separate_user:
            own(self.workspace, self.uid)
        argv, env, setup = command(self.iso, [interpreter()[0], "-I", "-c", CHILD], self.workspace, self.uid, self.limits)
        try:
            self.process = subprocess.Popen(
                argv, env=env, cwd=self.workspace, preexec_fn=setup, start_new_session=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            )
        except OSError as e:
            raise SessionError(f"the sandbox could not start ({self.iso.mode}): {e}") from e
        self.buffer = b""
        self.started = True
        try:
            self.receive(time.monotonic() + 30)
            for name, code in self.preload():
                answer = self.exchange({"op": "define", "name": name, "code": code}, time.monotonic() + self.limits.wall_s)
                if "error" in answer:
                    self.host("tool_failed", {"name": name, "error": answer["error"]})
        except Died as e:
            stderr = self.stop()
            raise SessionError(f"the sandbox did not start ({self.iso.mode}): {e}; {stderr[-300:]}") from None

    def stop(self) -> str:
        """Kill the whole sandbox (bubblewrap's pid namespace dies with it); its stderr."""
        process, self.process = self.process, None
        if process is None:
            return ""
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
        stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream:
                stream.close()
        return stderr

    def close(self) -> None:
        with self.lock:
            self.stop()

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def awake(self) -> None:
        """A running process: started again when it is gone (called holding the lock)."""
        if not self.alive:
            self.stop()
            self.start()

    # -- requests --------------------------------------------------------------------------------
    def run(self, code: str) -> Outcome:
        """Run ``code`` as a notebook cell: its printed output, a last bare expression's value, its error."""
        start = time.monotonic()
        with self.lock:
            lost = self.process is None and self.started
            self.awake()
            try:
                answer = self.exchange({"op": "run", "code": code}, start + self.limits.wall_s)
            except Died as e:
                self.stop()
                self.start()
                return Outcome("", None, f"{e}\n{RESTARTED}", restarted=True, seconds=time.monotonic() - start)
        output = answer.get("output", "")
        if lost:  # stopped while idle (too many live sessions): the model must know its variables went
            output = f"{IDLE_STOPPED}\n{output}"
        return Outcome(output, answer.get("value"), answer.get("error"), restarted=lost, seconds=time.monotonic() - start)

    def snapshot(self, folder: Path) -> dict:
        """The JSON-safe variables and the workspace's files, written under ``folder``."""
        with self.lock:
            self.awake()
            try:
                state = self.exchange({"op": "snapshot"}, time.monotonic() + self.limits.wall_s)
            except Died as e:
                self.stop()
                raise SessionError(f"the session died while being snapshotted: {e}") from None
        state = {"variables": state.get("variables", {}), "skipped": state.get("skipped", [])}
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        copy_files(self.workspace, folder / "files")
        (folder / "session.json").write_text(json.dumps(state), encoding="utf-8")
        return state

    def restore(self, folder: Path) -> None:
        """The files and variables of a snapshot, into this session (files replace those of the same
        name). The session is stopped first, so nothing inside can move files while they are copied."""
        state = json.loads((folder / "session.json").read_text(encoding="utf-8"))
        with self.lock:
            self.stop()
            if (folder / "files").is_dir():
                copy_files(folder / "files", self.workspace)
            self.start()
            self.exchange({"op": "restore", "variables": state["variables"]}, time.monotonic() + self.limits.wall_s)

    def exchange(self, request: dict, deadline: float) -> dict:
        """Send ``request``; serve the host calls its code makes (their time is not the code's, up to
        ``HOST_TIME_FACTOR`` times the wall clock in all) until done."""
        self.send(request)
        calls, last = 0, deadline + self.limits.wall_s * HOST_TIME_FACTOR
        while True:
            message = self.receive(deadline)
            if message.get("op") == "done":
                return message
            asked, calls = time.monotonic(), calls + 1
            if calls > MAX_HOST_CALLS:
                answer = {"error": f"more than {MAX_HOST_CALLS} tool calls in one run; not run"}
            else:
                try:
                    answer = {"result": self.host(message.pop("op", ""), message)}
                except ToolCallError as e:
                    answer = {"error": str(e)}
                except Exception as e:  # the host failed: the code gets an error, the session stays in step
                    log.exception("host call failed")
                    answer = {"error": f"the harness failed to serve this call ({type(e).__name__})"}
            deadline = min(deadline + time.monotonic() - asked, last)  # host time is not the code's, up to a cap
            self.send(answer)

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise Died(self.why_dead()) from None

    def receive(self, deadline: float) -> dict:
        stream = self.process.stdout.fileno()
        with selectors.DefaultSelector() as selector:
            selector.register(stream, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Died(f"stopped: the run passed its wall-clock limit of {self.limits.wall_s:g} s")
                if not selector.select(left):
                    continue
                chunk = os.read(stream, 1 << 16)
                if not chunk:
                    raise Died(self.why_dead())
                self.buffer += chunk
                if len(self.buffer) > PROTOCOL_BYTES:
                    raise Died("stopped: the session wrote more than its protocol allows")
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise Died("stopped: the session broke its line protocol") from None
        if not isinstance(message, dict):
            raise Died("stopped: the session broke its line protocol")
        return message

    def why_dead(self) -> str:
        try:
            code = self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            return "stopped: the session closed its protocol channel"
        signum = -code if code < 0 else code - 128 if code > 128 else 0
        if signum == signal.SIGXCPU:
            return f"stopped: the session used up its CPU limit of {self.limits.cpu_s} s"
        if signum:
            return f"the session crashed ({signal.Signals(signum).name})" if signum in signal.valid_signals() else f"the session died (signal {signum})"
        return f"the session exited (code {code})"


def own(folder: Path, uid: int) -> None:
    """Give the workspace to the sandbox's uid (as root, the sandbox runs as that uid). Called only
    while no sandbox runs there; links are never followed."""
    os.chown(folder, uid, uid)
    for _, dirs, files, fd in os.fwalk(folder, follow_symlinks=False):
        for name in dirs + files:
            os.chown(name, uid, uid, dir_fd=fd, follow_symlinks=False)


def copy_files(source: Path, target: Path) -> None:
    """Regular files, folders and links (as links) of a workspace; no FIFO, device or socket, and
    no setuid, setgid or sticky bit (what the sandbox made must not become a privileged host file)."""

    def special(folder: str, names: list[str]) -> list[str]:
        kinds = {name: os.lstat(os.path.join(folder, name)).st_mode for name in names}
        return [n for n, mode in kinds.items() if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode))] + [".tmp"]

    def plain_copy(src: str, dst: str) -> None:
        shutil.copyfile(src, dst, follow_symlinks=False)
        if not os.path.islink(dst):
            os.chmod(dst, os.lstat(src).st_mode & 0o777)

    shutil.copytree(source, target, symlinks=True, ignore=special, copy_function=plain_copy, dirs_exist_ok=True)
