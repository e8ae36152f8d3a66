"""OpenAI Responses API shapes ↔ the chat messages the turn loop works on.

Input items: a string (one user message), messages ({"role", "content"} with text parts), and
``function_call_output`` items (tool results). Output items: one ``message`` with
``output_text``, or ``function_call`` items. Tools arrive flat (``{"type": "function", "name",
"parameters"}``) and are passed on in the chat shape. A streamed response is the chat stream's
deltas turned into Responses events (``ResponseEvents``).
"""

import json
import uuid
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from molt.models.chat_shapes import Shape, checker
from molt.proxy.loop import text_of

Message = dict[str, Any]


class InputText(Shape):
    type: Literal["input_text", "output_text", "text"]
    text: str


class InputMessage(Shape):
    type: Literal["message"] = "message"
    role: Literal["system", "developer", "user", "assistant"]
    content: str | list[InputText]


class FunctionCallOutput(Shape):
    type: Literal["function_call_output"]
    call_id: str
    output: str


class FlatFunctionTool(Shape):
    type: Literal["function"]
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


ITEM_SHAPES = {"message": InputMessage, "function_call_output": FunctionCallOutput}
ITEM_CHECKS = {kind: checker(shape) for kind, shape in ITEM_SHAPES.items()}


def check_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each input item fits the shape its ``type`` names (ValueError naming the first that does not)."""
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        check = ITEM_CHECKS.get(kind) if isinstance(kind, str) else None
        if check is None:
            raise ValueError(f"input[{i}].type: input items of type {kind!r} are not supported ({', '.join(ITEM_SHAPES)})")
        check(item, f"input[{i}]")
    return items


InputItems = Annotated[list[dict[str, Any]], AfterValidator(check_items)]
FlatTools = Annotated[list[dict[str, Any]], AfterValidator(checker(list[FlatFunctionTool], "tools"))]


def input_messages(items: str | list[dict]) -> list[Message]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages = []
    for item in items:  # checked by ``InputItems``
        if item.get("type", "message") == "message":
            content = item["content"]
            if isinstance(content, list):
                content = "".join(part["text"] for part in content)
            role = "system" if item["role"] == "developer" else item["role"]  # the Responses API's name for it
            messages.append({"role": role, "content": content})
        else:
            messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": item["output"]})
    return messages


def chat_tools(tools: list[dict] | None) -> list[dict] | None:
    if not tools:
        return None
    out = []
    for tool in tools:  # checked by ``FlatTools``
        out.append({"type": "function", "function": {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}})
    return out


def output_items(message: Message) -> list[dict]:
    if message.get("tool_calls"):
        return [
            {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"], "status": "completed"}
            for call in message["tool_calls"]
        ]
    text = text_of(message)
    return [{"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]}]


def usage_of(chat_usage: dict) -> dict:
    prompt, completion = chat_usage.get("prompt_tokens", 0), chat_usage.get("completion_tokens", 0)
    return {"input_tokens": prompt, "output_tokens": completion, "total_tokens": prompt + completion, "input_tokens_details": {"cached_tokens": chat_usage.get("prompt_tokens_details", {}).get("cached_tokens", 0)}, "output_tokens_details": {"reasoning_tokens": 0}}


class ResponseEvents:
    """Chat-completion deltas → the Responses API's stream events, in the order the official
    client's ``responses.stream`` checks: created, in_progress; per output item added → (content
    part added → output_text deltas → done) or (function-call argument deltas → done) → item done;
    completed. Each method returns SSE lines."""

    def __init__(self, response: dict):
        self.response = {**response, "status": "in_progress", "output": []}
        self.sequence = 0
        self.items: list[dict] = []
        self.text: dict | None = None
        self.calls: dict[int, dict] = {}

    def event(self, type_: str, **fields: Any) -> str:
        body = {"type": type_, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return f"event: {type_}\ndata: {json.dumps(body, ensure_ascii=False)}\n\n"

    def start(self) -> list[str]:
        return [self.event("response.created", response=self.response), self.event("response.in_progress", response=self.response)]

    def add(self, item: dict) -> list[str]:
        self.items.append(item)
        return [self.event("response.output_item.added", output_index=len(self.items) - 1, item=item)]

    def delta(self, delta: dict) -> list[str]:
        lines: list[str] = []
        if delta.get("content"):
            if self.text is None:
                self.text = {"type": "message", "id": f"msg_{uuid.uuid4().hex[:24]}", "role": "assistant", "status": "in_progress", "content": []}
                lines += self.add(self.text)
                part = {"type": "output_text", "text": "", "annotations": []}
                lines.append(self.event("response.content_part.added", item_id=self.text["id"], output_index=self.index(self.text), content_index=0, part=part))
                self.text["content"].append(part)
            self.text["content"][0]["text"] += delta["content"]
            lines.append(self.event("response.output_text.delta", item_id=self.text["id"], output_index=self.index(self.text), content_index=0, delta=delta["content"], logprobs=[]))
        for part in delta.get("tool_calls") or []:
            call = self.calls.get(part.get("index", 0))
            function = part.get("function") or {}
            if call is None:
                call = {"type": "function_call", "id": f"fc_{uuid.uuid4().hex[:24]}", "call_id": part.get("id") or "", "name": function.get("name") or "", "arguments": "", "status": "in_progress"}
                self.calls[part.get("index", 0)] = call
                lines += self.add(dict(call))
            elif function.get("name"):
                call["name"] += function["name"]
            if function.get("arguments"):
                call["arguments"] += function["arguments"]
                lines.append(self.event("response.function_call_arguments.delta", item_id=call["id"], output_index=self.index(call), delta=function["arguments"]))
        return lines

    def index(self, item: dict) -> int:
        return next(i for i, added in enumerate(self.items) if added["id"] == item["id"])

    def finish(self, usage: dict) -> list[str]:
        lines, output = [], []
        if self.text is not None:
            index, part = self.index(self.text), self.text["content"][0]
            lines.append(self.event("response.output_text.done", item_id=self.text["id"], output_index=index, content_index=0, text=part["text"], logprobs=[]))
            lines.append(self.event("response.content_part.done", item_id=self.text["id"], output_index=index, content_index=0, part=part))
            self.text["status"] = "completed"
        for call in self.calls.values():
            lines.append(self.event("response.function_call_arguments.done", item_id=call["id"], output_index=self.index(call), arguments=call["arguments"]))
            call["status"] = "completed"
        for index, added in enumerate(self.items):
            item = self.text if self.text is not None and added["id"] == self.text["id"] else next(c for c in self.calls.values() if c["id"] == added["id"])
            output.append(item)
            lines.append(self.event("response.output_item.done", output_index=index, item=item))
        completed = {**self.response, "status": "completed", "output": output, "usage": usage_of(usage)}
        lines.append(self.event("response.completed", response=completed))
        return lines

    def failed(self, status: int, message: str) -> list[str]:
        """The engine failed mid-stream: ``response.failed`` with the error (no response is stored)."""
        error = {"code": "server_error" if status >= 500 else "invalid_request", "message": message}
        return [self.event("response.failed", response={**self.response, "status": "failed", "error": error})]
