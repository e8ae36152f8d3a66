"""Helpers the model writes for itself: staged, promoted only after they pass, demoted when they fail.

Every step is a registry record, so the history stays when a tool comes and goes:

- ``stage``: a ``tool`` record (name, code, reference cases); alias ``staged/<name>`` points at it;
- ``promote``: the staged code runs against its reference cases in a *fresh* sandbox (not the
  session that wrote it, whose state could make it pass) — and against the cases of the tool it
  would replace, so a new version cannot quietly change what the old one did; an ``evaluation``
  record keeps the verdict, and on a pass alias ``tool/<name>`` moves to the tool: later
  sessions can call it;
- ``demote``: each failure of a promoted tool in use is a ``tool-use`` evaluation; at
  ``DEMOTE_AFTER`` of them ``tool/<name>`` moves to the last one (verdict ``demoted``). Only
  aliases that point at a ``tool`` record are callable, so the tool is gone from new sessions
  while every record stays.

A helper's code may hold imports and function definitions only (no decorators, literal
defaults), so defining it at a session's start runs nothing; its name may not shadow a builtin or
the session's own functions.
"""

import ast
import builtins
import json
import keyword
import logging
from typing import Any

from molt.harness.substrate.function_tests import run_tests
from molt.harness.substrate.session import ToolCallError
from molt.registry.registry import Entry, Registry, RegistryError, text_hash

log = logging.getLogger("molt.harness")

PROMOTED, STAGED = "tool/", "staged/"
MAX_CASES = 50
DEMOTE_AFTER = 3
"""Failures in use that take a promoted tool out (one may be the caller's bad argument)."""
RESERVED = set(dir(builtins)) | {"tools", "call_tool", "save_tool", "promote_tool", "ToolError"}


class ToolLibrary:
    def __init__(self, registry: Registry, actor: str = "harness"):
        self.registry, self.actor = registry, actor

    def stage(self, name: str, code: str, cases: list[dict], description: str = "") -> str:
        """Record a helper and its reference cases ``[{"args": [...], "expected": value}]``; its record id."""
        check_tool(name, code, cases)
        attributes = {"code": code, "cases": cases, "description": description}
        entry = self.registry.add("tool", name, attributes, content_hash=text_hash(json.dumps([name, attributes], sort_keys=True)))
        self.registry.move(STAGED + name, entry.id, self.actor, "staged")
        return entry.id

    def promote(self, name: str) -> dict:
        """Validate the staged ``name`` in a fresh sandbox; callable from later sessions only if it passes."""
        try:
            tool = self.registry.get(STAGED + name)
        except RegistryError:
            raise ToolCallError(f"no helper named {name!r} is staged; call save_tool first") from None
        incumbent = self.current(name)
        cases = tool.attributes["cases"] + (incumbent.attributes["cases"] if incumbent and incumbent.id != tool.id else [])
        passed = run_tests(tool.attributes["code"], name, cases)
        metrics = {"cases": {"value": float(len(cases))}, "passed": {"value": float(passed)}}
        self.registry.add_evaluation("tool-validation", tool.id, metrics, "pass" if passed else "fail", parents={"tool": tool.id})
        if not passed:
            whose = " (its own and those of the version it would replace)" if len(cases) > len(tool.attributes["cases"]) else ""
            return {"promoted": False, "reason": f"{name} failed its {len(cases)} reference case(s){whose} in a fresh sandbox; it stays staged, not callable"}
        self.registry.move(PROMOTED + name, tool.id, self.actor, f"passed {len(cases)} reference case(s) in a fresh sandbox")
        return {"promoted": True, "reason": f"{name} passed its {len(cases)} reference case(s); later sessions can call it"}

    def current(self, name: str) -> Entry | None:
        """The promoted (callable) version of ``name``, if any."""
        target = self.registry.resolve_alias(PROMOTED + name)
        entry = self.registry.get(target[0]) if target else None
        return entry if entry is not None and entry.kind == "tool" else None

    def failed(self, name: str, why: str, session: str = "") -> bool:
        """Record a failure of the promoted ``name`` in use; demote it at ``DEMOTE_AFTER``. True when demoted."""
        tool = self.current(name)
        if tool is None:
            return False
        uses = [e for e in self.registry.records("evaluation") if e.name == "tool-use" and e.parents.get("tool") == tool.id]
        demote = len(uses) + 1 >= DEMOTE_AFTER
        evaluation = self.registry.add_evaluation("tool-use", tool.id, {"failures": {"value": float(len(uses) + 1)}}, "demoted" if demote else "failed", parents={"tool": tool.id})
        log.info("promoted tool %s failed in use (%s, session %s)", name, why[:200], session[:12])
        if demote:
            self.registry.move(PROMOTED + name, evaluation.id, self.actor, f"failed in use {DEMOTE_AFTER} times; last: {why[:200]}")
        return demote

    def promoted(self) -> list[tuple[str, str]]:
        """``(name, code)`` of every callable tool: what each session defines at its start."""
        tools = []
        for alias, record_id in self.registry.aliases().items():
            if alias.startswith(PROMOTED):
                entry = self.registry.get(record_id)
                if entry.kind == "tool":
                    tools.append((entry.name, entry.attributes["code"]))
        return tools

    def host_call(self, op: str, fields: dict) -> Any:
        """The session ops this library serves: ``save_tool``, ``promote_tool``, ``tool_failed``."""
        if op == "save_tool":
            try:
                record = self.stage(fields.get("name", ""), fields.get("code", ""), fields.get("cases"), fields.get("description", ""))
            except ValueError as e:
                raise ToolCallError(str(e)) from None
            return {"staged": fields["name"], "record": record}
        if op == "promote_tool":
            return self.promote(str(fields.get("name", "")))
        if op == "tool_failed":
            return {"demoted": self.failed(str(fields.get("name", "")), str(fields.get("error", "")), str(fields.get("session", "")))}
        raise ToolCallError(f"unknown host call {op!r}")


def check_tool(name: Any, code: Any, cases: Any) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name) or name in RESERVED:
        raise ValueError(f"a tool's name must be a Python identifier that is not a builtin or a session function, not {name!r}")
    if not isinstance(code, str):
        raise ValueError("the code must be a string")
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        raise ValueError(f"the code does not parse: {e}") from None
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        if not isinstance(node, ast.FunctionDef) or node.decorator_list or not all(map(literal, node.args.defaults + [d for d in node.args.kw_defaults if d])):
            raise ValueError("a tool's code holds imports and plain function definitions only (no decorators, literal defaults)")
    if name not in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}:
        raise ValueError(f"the code must define the function {name}()")
    if not isinstance(cases, list) or not 1 <= len(cases) <= MAX_CASES:
        raise ValueError(f"give 1 to {MAX_CASES} reference cases, as [{{\"args\": [...], \"expected\": value}}, ...]")
    for case in cases:
        if not isinstance(case, dict) or not isinstance(case.get("args"), list) or "expected" not in case:
            raise ValueError("each reference case is {\"args\": [...], \"expected\": value}")
        try:
            json.dumps(case)
        except (TypeError, ValueError):
            raise ValueError("reference cases must be JSON values") from None


def literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True
