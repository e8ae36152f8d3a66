"""The UI surfaces of a conversation as the proxy knows them: which specialist made each one, and
the A2UI messages a client holds, replayed from the answers in order.

A client's A2UI action (a button pressed on a surface) is a user turn. It goes to the specialist
that made the surface (no route hop), and the model sees only what the surface's button declares,
with private (NoAI) values withheld: ``molt.ui.a2ui.model_view_of_action``.
"""

import json
from dataclasses import dataclass, field

from molt.proxy.views import Message, Turn, text_of
from molt.ui.a2ui import VERSION, Surface, check_answer, client_action, model_view_of_action, surface_id_of


@dataclass
class ConversationSurfaces:
    messages: list[dict] = field(default_factory=list)
    """Every valid A2UI message the answers sent, in order (what the client holds)."""
    owners: dict[str, str] = field(default_factory=dict)
    """surfaceId → the label of the specialist whose answer created it."""
    surfaces: dict[str, Surface] = field(default_factory=dict)


def conversation_surfaces(turns: tuple[Turn, ...]) -> ConversationSurfaces:
    known = ConversationSurfaces()
    for turn in turns:
        for reply in turn.replies:
            if reply.get("role") != "assistant" or '"version"' not in text_of(reply):
                continue
            checked = check_answer(text_of(reply), known.messages)
            if not checked.valid:
                continue
            known.messages += checked.messages
            known.surfaces = checked.surfaces
            for message in checked.messages:
                if "createSurface" in message:
                    known.owners[surface_id_of(message)] = turn.label
                elif "deleteSurface" in message:
                    known.owners.pop(surface_id_of(message), None)
    return known


def action_turn(user: Message, turns: tuple[Turn, ...]) -> tuple[str, Message] | None:
    """(owner label, the user message as models see it) when ``user`` is an A2UI action; None otherwise.
    An action on a surface no answer of this conversation shows is a ValueError."""
    action = client_action(text_of(user))
    if action is None:
        return None
    known = conversation_surfaces(turns)
    surface_id = action["surfaceId"]
    if surface_id not in known.owners:
        raise ValueError(f"the action names surface {surface_id!r}, which no answer in this conversation shows")
    seen = model_view_of_action(action, known.surfaces.get(surface_id))
    return known.owners[surface_id], {"role": "user", "content": json.dumps({"version": VERSION, "action": seen}, ensure_ascii=False)}
