"""Per-family scores for one answer to one held-out case.

- ``agent``: a call case scores 1 when the calls match the expected ones exactly (names and
  parsed arguments, order-free); a no-call case when the answer makes no call; a result case
  when it makes no call and mentions every value of the tool result. ``no_call_precision`` is
  computed over a set (see ``summarise``).
- ``coding``: the answer's first Python code block passes the case's tests in the sandbox.
- ``genui``: the answer is a valid surface of the catalog (``valid``), and shows every text the
  request listed (``score`` needs both).
- ``chat``: the rubric: every required word, at most 40 words, plain text (no tool call, code
  block or JSON).
"""

import json
import re
from typing import Any

from molt.datagen.common import Case
from molt.evaluate.sandbox import passes
from molt.ui.catalog import check_surface

CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)
Message = dict[str, Any]


def calls_of(message: Message) -> list[dict]:
    calls = []
    for call in message.get("tool_calls") or []:
        try:
            arguments = json.loads(call["function"].get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = None
        calls.append({"name": call["function"]["name"], "arguments": arguments})
    return calls


def canonical(calls: list[dict]) -> list[str]:
    return sorted(json.dumps(c, sort_keys=True) for c in calls)


def score(case: Case, message: Message) -> dict[str, float]:
    text = message.get("content") or ""
    check = case.check
    if case.family == "agent":
        made = calls_of(message)
        if "<tool_" in text:  # a malformed call (or an echoed result) is not a plain answer
            made = made or [{"name": None, "arguments": None}]
        if check["kind"] == "call":
            right = canonical(made) == canonical(check["calls"])
        elif check["kind"] == "no_call":
            right = not made
        else:  # a tool result came back: answer in words that use it
            right = not made and all(v in text for v in check["mention"])
        return {"score": float(right), "called": float(bool(made)), "expected_call": float(check["kind"] == "call")}
    if case.family == "coding":
        block = CODE_BLOCK.search(text)
        return {"score": float(block is not None and passes(block.group(1), check["tests"]))}
    if case.family == "genui":
        surface = check_surface(text.strip())
        shows = surface.valid and all(s in text for s in check["shows"])
        return {"score": float(shows), "valid": float(surface.valid)}
    plain = not message.get("tool_calls") and "```" not in text and not text.lstrip().startswith("{")
    words = len(text.split())
    ok = plain and 0 < words <= 40 and all(w.lower() in text.lower() for w in check["require"])
    return {"score": float(ok)}


def summarise(family: str, scores: list[dict[str, float]]) -> dict[str, float]:
    """Means over a set; for agent also exact-match on call cases and no-call precision."""
    n = len(scores)
    summary = {"score": sum(s["score"] for s in scores) / n if n else 0.0, "n": float(n)}
    if family == "agent":
        calls = [s for s in scores if s["expected_call"]]
        silent = [s for s in scores if not s["called"]]
        summary["exact_match"] = sum(s["score"] for s in calls) / len(calls) if calls else 0.0
        summary["no_call_precision"] = sum(not s["expected_call"] for s in silent) / len(silent) if silent else 0.0
    if family == "genui":
        summary["valid"] = sum(s["valid"] for s in scores) / n if n else 0.0
    return summary
