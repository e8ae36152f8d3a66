"""The proxy's request bodies and response shapes (OpenAI chat completions; Responses shapes are
in ``responses_api.py``), and how an answer says who answered and why."""

import time
import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from molt.harness.memory import USER_ID
from molt.models.chat_shapes import Messages, Tools
from molt.proxy.loop import Sampling
from molt.proxy.responses_api import FlatTools, InputItems
from molt.router import RouteDecision

SYSTEM_MODEL = "molt"
"""The model name that routes; a specialist's label names that specialist instead."""


class TurnRequest(BaseModel):
    """The fields both APIs share."""

    model: str = SYSTEM_MODEL
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, gt=0, le=1)
    stream: bool = False
    user: str | None = Field(None, pattern=USER_ID.pattern)
    """The end user (OpenAI's field): names whose memory the turn reads (``[memory]``)."""


class ChatRequest(TurnRequest):
    messages: Messages
    tools: Tools | None = None
    max_tokens: int | None = Field(None, ge=1)
    """Deprecated by OpenAI in favour of max_completion_tokens, which wins when both are sent."""
    max_completion_tokens: int | None = Field(None, ge=1)

    @property
    def sampling(self) -> Sampling:
        limit = self.max_completion_tokens if self.max_completion_tokens is not None else self.max_tokens
        return Sampling(limit, self.temperature, self.top_p)


class ResponsesRequest(TurnRequest):
    input: str | InputItems
    tools: FlatTools | None = None
    instructions: str | None = None
    max_output_tokens: int | None = Field(None, ge=1)
    previous_response_id: str | None = None

    @property
    def sampling(self) -> Sampling:
        return Sampling(self.max_output_tokens, self.temperature, self.top_p)


def split(messages: list[dict]) -> tuple[list[dict], list[dict], list[dict]]:
    """(leading system messages, earlier history, the new messages: a user message or tool results)."""
    count = 0
    while count < len(messages) and messages[count].get("role") == "system":
        count += 1
    system, rest = messages[:count], messages[count:]
    start = len(rest)
    while start > 0 and rest[start - 1].get("role") == "tool":
        start -= 1
    if start == len(rest):
        start -= 1  # the last message itself: a user message, checked by the loop
    return system, rest[:start], rest[start:]


def attribution(decision: RouteDecision) -> dict:
    return {"specialist": decision.label, "reason": decision.reason}


def route_headers(decision: RouteDecision, turn_id: str) -> dict:
    """Who answered and why, and the turn's id (for ``POST /v1/feedback``)."""
    return {"x-molt-specialist": decision.label, "x-molt-route-reason": decision.reason.encode("ascii", "replace").decode(), "x-molt-turn-id": turn_id}


class FeedbackRequest(BaseModel):
    """``POST /v1/feedback``: the user's verdict on one turn."""

    model_config = ConfigDict(extra="forbid")
    turn_id: str = Field(min_length=1, max_length=40)
    rating: Literal["up", "down"]
    comment: str | None = Field(None, max_length=4000)


def completion(model: str, message: dict, usage: dict, finish_reason: str, decision: RouteDecision, checks: dict | None = None) -> dict:
    """A chat completion; ``molt`` says who answered, why, and what the harness checked (a surface's repairs)."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage, "molt": {**attribution(decision), **({"checks": checks} if checks else {})},
    }


def chunk_base(model: str, decision: RouteDecision) -> dict:
    """The fields every streamed chunk of one answer shares: the proxy's id and model, and who answers."""
    return {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion.chunk", "created": int(time.time()), "model": model, "molt": attribution(decision)}
