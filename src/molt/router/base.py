"""The router interface: a turn in (``RouteRequest``), one label out (``RouteDecision``), and the
keyword guardrail every router shares.

A router decides from the turn, not only from its text: the functions the client offers and the
conversation so far (tool results, code, a UI surface) say as much about who should answer as the
words do. Guardrails still read the user's text alone.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from molt.hcp.v1 import Guardrail

Message = dict[str, Any]


@dataclass(frozen=True)
class RouteRequest:
    """One turn to route. Example::

        request = RouteRequest.of([{"role": "user", "content": "Get me a taxi to the station"}], tools=None)
        assert request.text == "Get me a taxi to the station" and request.history == ()
    """

    text: str
    """The user's text of this turn (the last user message)."""
    tools: tuple[dict, ...] = ()
    """The OpenAI ``tools`` the client offers this turn."""
    messages: tuple[Message, ...] = ()
    """The conversation up to this turn without system messages: it ends with the user message,
    or with the tool calls and tool results that answer it. Empty: no history known."""

    @classmethod
    def of(cls, messages: Sequence[Message], tools: Sequence[dict] | None = None) -> "RouteRequest":
        """The turn whose user text is the last user message of ``messages``."""
        kept = tuple(m for m in messages if m.get("role") != "system")
        users = [m for m in kept if m.get("role") == "user"]
        return cls(message_text(users[-1]) if users else "", tuple(tools or ()), kept)

    @property
    def last_user(self) -> int:
        """Index of the user message in ``messages`` (-1 when there is none)."""
        return max((i for i, m in enumerate(self.messages) if m.get("role") == "user"), default=-1)

    @property
    def history(self) -> tuple[Message, ...]:
        """The messages before this turn's user message."""
        return self.messages[: max(self.last_user, 0)]

    @property
    def replies(self) -> tuple[Message, ...]:
        """This turn's messages after the user's: tool calls and their results."""
        return self.messages[self.last_user + 1 :] if self.last_user >= 0 else ()


@dataclass(frozen=True)
class RouteDecision:
    label: str
    reason: str
    """Why, in words: e.g. "guardrail: 'python'" or "scored: coding -1.20 vs chat -3.41"."""
    kind: str = "scored"
    """How: scored, abstained, guardrail, only (one specialist), named (by the client), tool_results."""
    scores: dict[str, float] = field(default_factory=dict)


class Router(Protocol):
    async def route(self, request: RouteRequest) -> RouteDecision: ...


def message_text(message: Message) -> str:
    """A message's text: its string content, or the text parts of a content list."""
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def guardrail_decision(guardrails: list[Guardrail], user_text: str) -> RouteDecision | None:
    """The decision a guardrail forces, if any: every router checks these before its own scoring."""
    forced = guardrail_label(guardrails, user_text)
    return RouteDecision(forced[0], f"guardrail: {forced[1]!r}", "guardrail") if forced else None


def guardrail_label(guardrails: list[Guardrail], user_text: str) -> tuple[str, str] | None:
    """(label, keyword) of the first guardrail whose keyword appears as whole words, any case."""
    for guardrail in guardrails:
        for keyword in guardrail.keywords:
            if re.search(rf"(?<!\w){re.escape(keyword)}(?!\w)", user_text, re.IGNORECASE):
                return guardrail.label, keyword
    return None
