"""Chat datasets as OpenAI-style JSONL: one ``{"messages": [...], "tools": [...]?}`` per line.

Every problem is reported as ``FILE:LINE: what is wrong`` before any training starts.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from molt.models.renderer import Message, check_message, message_text


class DatasetError(ValueError):
    """A dataset that cannot be trained on; the message names the file and line."""


@dataclass(frozen=True)
class ChatExample:
    messages: list[Message]
    tools: list[dict] | None
    line: int


def read_chat_jsonl(path: Path) -> list[ChatExample]:
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    examples = []
    with path.open("rb") as f:
        for number, raw in enumerate(f, 1):
            where = f"{path}:{number}"
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise DatasetError(f"{where}: not UTF-8 text") from None
            if line.strip():
                examples.append(parse_example(line, number, where))
    if not examples:
        raise DatasetError(f"{path}: empty dataset (no examples)")
    return examples


def parse_example(line: str, number: int, where: str) -> ChatExample:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as e:
        raise DatasetError(f"{where}: malformed JSON ({e.msg}, column {e.colno})") from None
    if not isinstance(row, dict) or not isinstance(row.get("messages"), list) or not row["messages"]:
        raise DatasetError(f"{where}: expected an object with a non-empty \"messages\" list")
    for i, message in enumerate(row["messages"]):
        if isinstance(message, dict) and "role" not in message:
            raise DatasetError(f"{where}: message {i} has no \"role\"")
        try:
            check_message(message)
            message_text(message)
        except ValueError as e:
            raise DatasetError(f"{where}: message {i}: {e}") from None
    if not any(m["role"] == "assistant" for m in row["messages"]):
        raise DatasetError(f"{where}: no assistant message, so nothing to learn")
    tools = row.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise DatasetError(f"{where}: \"tools\" must be a list of OpenAI function schemas")
    return ChatExample(row["messages"], tools, number)
