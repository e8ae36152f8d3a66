"""Tool-call text formats: how tools are offered to the model, how it writes calls, how results
come back, and how generated text is parsed into OpenAI ``tool_calls``.

The format is a parameter of the renderer (the HCP names it), so train and serve always agree.
The default, ``hermes``, is the widely used one that vLLM's ``--tool-call-parser hermes`` reads:

- tools are listed in the system prompt, one OpenAI tool JSON object per line inside ``<tools>``;
- each call is ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>``, several in a row
  for parallel calls, after any plain text;
- a tool result is its own ``tool`` turn whose body is ``<tool_response>\\n...\\n</tool_response>``.
"""

import json
import re
import uuid
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ParsedText:
    content: str
    """The text outside tool-call blocks, stripped (malformed blocks stay in it, so nothing is lost)."""
    tool_calls: list[dict[str, Any]]
    """OpenAI-shaped calls: ``{"id", "type": "function", "function": {"name", "arguments": str}}``."""
    errors: list[str]
    """One message per tool-call block that could not be parsed."""


class ToolCallFormat(ABC):
    name: str

    @abstractmethod
    def tools_prompt(self, tools: list[dict[str, Any]]) -> str:
        """System-prompt section that offers ``tools`` (OpenAI tool objects) to the model."""

    @abstractmethod
    def format_calls(self, tool_calls: list[dict[str, Any]]) -> str:
        """The text a model writes to make these OpenAI-shaped calls."""

    @abstractmethod
    def format_result(self, content: str) -> str:
        """Body of the turn that carries one tool result back to the model."""

    @abstractmethod
    def parse(self, text: str) -> ParsedText:
        """Split generated text into plain content and tool calls."""


class HermesToolFormat(ToolCallFormat):
    name = "hermes"
    _CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)

    def tools_prompt(self, tools: list[dict[str, Any]]) -> str:
        listed = "\n".join(json.dumps(tool, ensure_ascii=False) for tool in tools)
        return (
            "# Tools\n\n"
            "You can call functions to help with the request. They are listed below, one JSON "
            "object per line, inside <tools></tools>:\n"
            f"<tools>\n{listed}\n</tools>\n\n"
            "To call a function, write its name and arguments as a JSON object inside "
            "<tool_call></tool_call>, one block per call:\n"
            '<tool_call>\n{"name": "<function name>", "arguments": {<arguments as JSON>}}\n</tool_call>'
        )

    def format_calls(self, tool_calls: list[dict[str, Any]]) -> str:
        blocks = []
        for call in tool_calls:
            function = call["function"]
            call_json = json.dumps({"name": function["name"], "arguments": arguments_object(function)}, ensure_ascii=False)
            blocks.append(f"<tool_call>\n{call_json}\n</tool_call>")
        return "\n".join(blocks)

    def format_result(self, content: str) -> str:
        return f"<tool_response>\n{content}\n</tool_response>"

    def parse(self, text: str) -> ParsedText:
        calls, errors, kept = [], [], []
        position = 0
        for match in self._CALL.finditer(text):
            kept.append(text[position : match.start()])
            position = match.end()
            call, error = _parse_call(match.group(1))
            if error:
                errors.append(error)
                kept.append(match.group(0))
            else:
                calls.append(call)
        rest = text[position:]
        if "<tool_call>" in rest:
            errors.append("unterminated <tool_call> block")
        kept.append(rest)
        return ParsedText(content="".join(kept).strip(), tool_calls=calls, errors=errors)


def _parse_call(body: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as e:
        return None, f"tool call is not valid JSON ({e.msg} at char {e.pos}): {body[:80]!r}"
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None, f"tool call needs a string 'name': {body[:80]!r}"
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        return None, f"tool call {data['name']!r}: 'arguments' must be a JSON object"
    function = {"name": data["name"], "arguments": json.dumps(arguments, ensure_ascii=False)}
    return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": function}, None


def arguments_object(function: dict[str, Any]) -> dict[str, Any]:
    """OpenAI sends ``arguments`` as a JSON string; accept a dict too. Raises ValueError if invalid."""
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError as e:
            raise ValueError(f"tool call {function.get('name')!r}: arguments are not valid JSON ({e.msg})") from e
    if not isinstance(arguments, dict):
        raise ValueError(f"tool call {function.get('name')!r}: arguments must be a JSON object")
    return arguments


TOOL_CALL_FORMATS: dict[str, type[ToolCallFormat]] = {"hermes": HermesToolFormat}


def get_tool_call_format(name: str) -> ToolCallFormat:
    if name not in TOOL_CALL_FORMATS:
        raise ValueError(f"unknown tool-call format {name!r}; supported: {', '.join(TOOL_CALL_FORMATS)}")
    return TOOL_CALL_FORMATS[name]()
