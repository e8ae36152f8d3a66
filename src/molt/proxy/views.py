"""Each specialist's own view of a conversation (DESIGN §1.2, step 2).

An adapter sees the system messages, its own past turns verbatim (assistant and tool messages),
every other adapter's past turns collapsed to the user's message plus that turn's summary, and
then the current turn. The view is a pure function of the stored turns, and past turns never
change, so the rendered tokens of one turn are a prefix of the next turn's for the same adapter:
re-entering an adapter hits the engine's per-adapter prefix cache.

A view that would not fit the context window is cut by a ``Window`` (the turn loop picks the
smallest): the adapter's own oldest turns collapse to their summaries first, then the oldest
turns drop out.
"""

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Message = dict[str, Any]


@dataclass(frozen=True)
class Turn:
    label: str
    """The specialist that answered."""
    user: Message
    """The user message that opened the turn."""
    replies: tuple[Message, ...]
    """What the specialist produced, in order: assistant messages (with tool calls) and tool results."""
    summary: str | None = None
    """The specialist's short summary, shown to the others; None while it is still being written."""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    writing: "asyncio.Task[str] | None" = field(default=None, compare=False, repr=False)
    """The task writing the summary. It travels with the turn, so a summary lives exactly as long
    as a stored conversation that holds it: the proxy itself keeps no per-turn state."""


class PendingSummary(RuntimeError):
    """A view needs a turn's summary that has not been written yet (the caller awaits it first)."""


def collapsed(turn: Turn) -> Message:
    if turn.summary is None:
        raise PendingSummary(f"the summary of a {turn.label!r} turn is still pending")
    return {"role": "assistant", "content": f"[{turn.label}] {turn.summary}"}


@dataclass(frozen=True)
class Window:
    """How much of the conversation a view leaves out to fit the context window."""

    dropped: int = 0
    """The oldest turns, left out entirely."""
    collapsed: int = 0
    """The turns before this index show as user message + summary even when they are the adapter's own."""


def own_view(system: Sequence[Message], turns: Sequence[Turn], label: str, current: Sequence[Message], window: Window = Window()) -> list[Message]:
    """The messages adapter ``label`` answers from."""
    view = list(system)
    for index in range(window.dropped, len(turns)):
        view.extend(turn_block(turns[index], label, verbatim=index >= window.collapsed))
    view.extend(current)
    return view


def turn_block(turn: Turn, label: str, verbatim: bool = True) -> list[Message]:
    """One past turn in ``label``'s view: its own turns verbatim, others' (and collapsed ones) as user message + summary."""
    return [turn.user, *turn.replies] if verbatim and turn.label == label else [turn.user, collapsed(turn)]


def text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""
