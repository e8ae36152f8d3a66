"""Helpers the model writes for itself: staged, promoted only after they pass, demoted when they fail.

Every step is a registry record, so the history stays when a tool comes and goes:

- ``stage``: a ``tool`` record (name, code, reference cases); alias ``staged/<name>`` points at it;
- ``promote``: the staged code runs against its reference cases in a *fresh* sandbox (not the
  session that wrote it, whose state could make it pass); an ``evaluation`` record keeps the
  verdict, and on a pass alias ``tool/<name>`` moves to the tool: later sessions can call it;
- ``demote``: a promoted tool that failed in use gets an evaluation record with verdict
  ``demoted`` and ``tool/<name>`` moves to it; only aliases that point at a ``tool`` record are
  callable, so the tool is gone from new sessions while every record stays.
"""

import json
import keyword
from typing import Any

from molt.families.sandbox import run_tests
from molt.harness.substrate.session import ToolCallError
from molt.registry.registry import Registry, RegistryError, text_hash

PROMOTED, STAGED = "tool/", "staged/"
MAX_CASES = 50


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
        cases = tool.attributes["cases"]
        passed = run_tests(tool.attributes["code"], name, cases)
        verdict = "pass" if passed else "fail"
        self.registry.add_evaluation("tool-validation", tool.id, {"cases": len(cases), "passed": passed}, verdict, parents={"tool": tool.id})
        if not passed:
            return {"promoted": False, "reason": f"{name} failed its {len(cases)} reference case(s) in a fresh sandbox; it stays staged, not callable"}
        self.registry.move(PROMOTED + name, tool.id, self.actor, f"passed {len(cases)} reference case(s) in a fresh sandbox")
        return {"promoted": True, "reason": f"{name} passed its {len(cases)} reference case(s); later sessions can call it"}

    def demote(self, name: str, why: str) -> bool:
        """Take a promoted tool out of use, keeping its records; False when it was not promoted."""
        current = self.registry.resolve_alias(PROMOTED + name)
        if current is None or self.registry.get(current[0]).kind != "tool":
            return False
        evaluation = self.registry.add_evaluation("tool-use", current[0], {"error": why[:500]}, "demoted", parents={"tool": current[0]})
        self.registry.move(PROMOTED + name, evaluation.id, self.actor, f"failed in use: {why[:200]}")
        return True

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
            return {"demoted": self.demote(str(fields.get("name", "")), str(fields.get("error", "")))}
        raise ToolCallError(f"unknown host call {op!r}")


def check_tool(name: str, code: str, cases: Any) -> None:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"a tool's name must be a Python identifier, not {name!r}")
    if not isinstance(code, str) or f"def {name}(" not in code:
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
