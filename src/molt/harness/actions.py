"""Two action modes, one harness: function calling and the REPL substrate, chosen per turn.

- **function calling:** the model calls the business functions (the HCP's tool proxies, or a
  bench's or RL environment's functions) one round at a time; the harness runs each call and
  sends the result back.
- **REPL:** the model gets one tool, ``python``: its code runs in the conversation's sandboxed
  session (``molt.harness.substrate``), where the same functions are ``tools.<name>(...)``; many
  calls and the arithmetic between them fit in one step.

The HCP's ``[actions]`` table picks the mode per turn (``auto``: REPL when the request reads as
multi-step data work). ``ActionHarness`` runs the steps of a turn for the proxy's turn loop
(``molt.proxy.loop``) and for benches and RL rollouts alike: each passes its own ``ask`` (the
model call) and gets the finished turn back.
"""

import asyncio
import json
import logging
import shutil
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Protocol

from molt.harness.substrate.isolation import Limits
from molt.harness.substrate.session import SessionError, ToolCallError
from molt.harness.substrate.sessions import Substrate
from molt.harness.tools import ToolLibrary
from molt.hcp.v1 import Actions

log = logging.getLogger("molt.harness")
PYTHON = "python"
FUNCTION_CALLING, REPL = "function_calling", "repl"
SNAPSHOTS_KEPT = 8
"""Per session: the states after its last REPL turns, where a branched conversation may start."""
TRACKED = 64
"""Conversations whose session state is kept, per live session (``[actions] sessions``)."""


def python_tool(functions: list[dict]) -> dict:
    """The REPL mode's one tool; its description lists the functions callable from the code."""
    listed = "\n".join(f"- tools.{f['function']['name']}({', '.join(f['function']['parameters'].get('properties', {}))}): {f['function'].get('description', '')}" for f in functions)
    description = (
        "Run Python in your own session (variables and files persist between calls) and get back what it prints. "
        "Call the API with keyword arguments; each returns JSON values:\n" + (listed or "(no API functions)")
    )
    parameters = {"type": "object", "properties": {"code": {"type": "string", "description": "Python code; print the values you need."}}, "required": ["code"]}
    return {"type": "function", "function": {"name": PYTHON, "description": description, "parameters": parameters}}


class Backend(Protocol):
    """The functions a harness runs for the model (``molt.harness.proxies.ProxyRunner``, or local ones)."""

    def schemas(self) -> list[dict]: ...

    def call(self, name: str, arguments: dict, key: str) -> Any: ...


class LocalFunctions:
    """Plain Python functions as a backend (benches, RL environments): results must be JSON values."""

    def __init__(self, call: Callable[[str, dict], Any], schemas: list[dict]):
        self._call, self._schemas = call, schemas

    def schemas(self) -> list[dict]:
        return self._schemas

    def call(self, name: str, arguments: dict, key: str) -> Any:
        if name not in {s["function"]["name"] for s in self._schemas}:
            raise ToolCallError(f"no function named {name!r}")
        return self._call(name, arguments)


@dataclass
class Step:
    """What one turn did: the messages between the request and the final answer, and counts."""

    messages: list[dict] = field(default_factory=list)
    model_calls: int = 0
    executed: int = 0


class ActionHarness:
    def __init__(self, backend: Backend, policy: Actions, root: Path, library: ToolLibrary | None = None):
        """``policy``: the HCP's ``[actions]`` table; ``root``: where sessions and their snapshots
        live; ``library``: where the session's ``save_tool``/``promote_tool`` go, and whose promoted
        tools every session starts with (none: those calls fail with a clear error)."""
        self.backend, self.policy, self.root, self.library = backend, policy, root, library
        limits = Limits(cpu_s=policy.cpu_s, memory_bytes=policy.memory_mb << 20, processes=policy.processes, wall_s=policy.wall_s, output_bytes=policy.output_kb << 10)
        preload = library.promoted if library is not None else list
        self.substrate = Substrate(root / "sessions", limits, host=self.host_call, preload=preload, max_sessions=policy.sessions)
        self.repl_allowed = self.substrate.iso.mode == "bubblewrap" or policy.weak_sandbox
        if not self.repl_allowed:
            log.warning("the REPL is off: %s (set [actions] weak_sandbox = true to run model code anyway)", self.substrate.iso.describe())
        self.heads: OrderedDict[str, int] = OrderedDict()
        """Session → the number of turns its live state has seen (a conversation at another point is a branch)."""
        self.running: dict[str, list] = {}
        """Session → [the idempotency key of the step whose code runs there, its proxy calls so far]."""

    # -- policy ----------------------------------------------------------------------------------
    def mode_for(self, label: str, text: str) -> str | None:
        """The turn's action mode, or None when the harness stays out of it. The REPL needs the
        strong sandbox unless the HCP accepts the weak one (``[actions] weak_sandbox``)."""
        if label not in self.policy.specialists:
            return None
        mode = self.policy.mode if self.policy.mode != "auto" else REPL if any(w in text.lower() for w in self.policy.repl_words) else FUNCTION_CALLING
        return FUNCTION_CALLING if mode == REPL and not self.repl_allowed else mode

    def tools(self, mode: str | None) -> list[dict]:
        if mode is None:
            return []
        return [python_tool(self.backend.schemas())] if mode == REPL else self.backend.schemas()

    def names(self, mode: str | None) -> set[str]:
        return {t["function"]["name"] for t in self.tools(mode)}

    # -- sessions --------------------------------------------------------------------------------
    def session_for(self, session: str, turns: int) -> str:
        """The session a conversation at ``turns`` turns acts in: its own, or — when another branch
        moved that session on — a copy restored from the state it had after turn ``turns``."""
        head = self.heads.get(session)
        if head is None or head == turns:
            self.heads[session] = turns
            return session
        branch = uuid.uuid4().hex
        kept = [p for p in (self.root / "snapshots" / session).glob("*") if int(p.name) <= turns]
        if kept:  # the state after the last turn that ran code, up to the branch point
            self.substrate.session(branch).restore(max(kept, key=lambda p: int(p.name)))
        self.heads[branch] = turns
        return branch

    def snapshot_path(self, session: str, turns: int) -> Path:
        return self.root / "snapshots" / session / f"{turns:06d}"

    def finish_turn(self, session: str, turns: int) -> list[str]:
        """After a turn: the session's state now follows turn ``turns + 1``. Returns the oldest
        tracked conversations past ``TRACKED`` per live session, for ``forget``."""
        self.heads[session] = turns + 1
        self.heads.move_to_end(session)
        return [self.heads.popitem(last=False)[0] for _ in range(len(self.heads) - TRACKED * self.policy.sessions)]

    def forget(self, sessions: list[str]) -> None:
        """Remove these sessions, their files and snapshots (blocking: run it off the event loop)."""
        for old in sessions:
            self.substrate.drop(old)
            shutil.rmtree(self.root / "snapshots" / old, ignore_errors=True)

    def keep_state(self, session: str, turns: int) -> None:
        """Snapshot the session as it is after turn ``turns``: where a branch from there starts.
        A snapshot that fails (the code left something uncopyable) is logged; the turn stands."""
        try:
            self.substrate.session(session).snapshot(self.snapshot_path(session, turns))
        except (OSError, shutil.Error, SessionError) as e:
            log.warning("no snapshot of session %s after turn %d: %s", session[:12], turns, e)
            return
        kept = sorted((self.root / "snapshots" / session).iterdir())
        for old in kept[:-SNAPSHOTS_KEPT]:
            shutil.rmtree(old, ignore_errors=True)

    def host_call(self, scope: str):
        """The session's ``tools.<name>(...)`` calls go to the backend, keyed by session and order."""

        def serve(op: str, fields: dict) -> Any:
            if op != "call":
                if self.library is None:
                    raise ToolCallError(f"{op} is not available here: this harness keeps no tool library")
                return self.library.host_call(op, {**fields, "session": scope})
            place = self.running[scope]  # [the key of the step running this code, calls so far]
            place[1] += 1
            return self.backend.call(str(fields.get("name", "")), fields.get("arguments") or {}, f"{place[0]}:{place[1]}")

        return serve

    # -- steps -----------------------------------------------------------------------------------
    def execute(self, call: dict, session: str, key: str) -> dict:
        """One call of the model's, run by the harness: the tool message that answers it. ``key``
        names the call for idempotency: the session, the turn and the call's place in it (never
        the model's own call id, which models repeat), so a retried turn makes the same keys."""
        name = call["function"]["name"]
        try:
            arguments = json.loads(call["function"].get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            content = json.dumps({"error": "the arguments must be a JSON object"})
        elif name == PYTHON:
            self.running[session] = [key, 0]  # the code's own calls are numbered under this key
            try:
                content = self.substrate.run(session, str(arguments.get("code", ""))).text()
            finally:
                self.running.pop(session, None)
        else:
            try:
                content = json.dumps(self.backend.call(name, arguments, key), ensure_ascii=False)
            except ToolCallError as e:
                content = json.dumps({"error": str(e)})
        return {"role": "tool", "tool_call_id": call["id"], "content": content}

    async def run(self, ask: Callable[[list[dict], bool], Awaitable[dict]], first: dict, mode: str, session: str, turn_id: str) -> tuple[dict, Step]:
        """Run the harness's calls of ``first`` (the model's answer) and ask again, until an answer
        with no harness call, or ``max_steps`` model calls (then one more with tools off).
        ``ask(messages after the view, tools_on)`` makes one model call and returns its message."""
        names, step, message = self.names(mode), Step(model_calls=1), first
        while True:
            calls = message.get("tool_calls") or []
            mine = [c for c in calls if c["function"]["name"] in names]
            if not mine or len(mine) != len(calls):
                return message, step  # a final answer, or calls of the client's own functions
            results = []
            for call in mine:
                results.append(await asyncio.to_thread(self.execute, call, session, f"{session}:{turn_id}:{step.executed}"))
                step.executed += 1
            step.messages += [message, *results]
            tools_on = step.model_calls < self.policy.max_steps
            message = await ask(step.messages, tools_on)
            step.model_calls += 1
            if not tools_on:
                return {k: v for k, v in message.items() if k != "tool_calls"}, step

    def close(self) -> None:
        self.substrate.close()
