"""OpenAI Responses API shapes ↔ the chat messages the turn loop works on.

Input items: a string (one user message), messages ({"role", "content"} with text parts), and
``function_call_output`` items (tool results). Output items: one ``message`` with
``output_text``, or ``function_call`` items. Tools arrive flat (``{"type": "function", "name",
"parameters"}``) and are passed on in the chat shape.
"""

import uuid
from typing import Any

from molt.proxy.loop import text_of

Message = dict[str, Any]


def input_messages(items: str | list[dict]) -> list[Message]:
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    messages = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            messages.append({"role": item.get("role", "user"), "content": content})
        elif kind == "function_call_output":
            messages.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output", "")})
        else:
            raise ValueError(f"input items of type {kind!r} are not supported (message, function_call_output)")
    return messages


def chat_tools(tools: list[dict] | None) -> list[dict] | None:
    if not tools:
        return None
    out = []
    for tool in tools:
        if tool.get("type") != "function" or "name" not in tool:
            raise ValueError("tools must be function tools: {\"type\": \"function\", \"name\", \"parameters\"}")
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
