"""The router interface and the keyword guardrail every router shares."""

import re
from dataclasses import dataclass, field
from typing import Protocol

from molt.hcp.v1 import Guardrail


@dataclass(frozen=True)
class RouteDecision:
    label: str
    reason: str
    """Why, in words: e.g. "guardrail: 'python'" or "scored: coding -1.20 vs chat -3.41"."""
    kind: str = "scored"
    """How: scored, abstained, guardrail, only (one specialist), named (by the client), tool_results."""
    scores: dict[str, float] = field(default_factory=dict)


class Router(Protocol):
    async def route(self, user_text: str) -> RouteDecision: ...


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
