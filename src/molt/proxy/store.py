"""How the proxy finds the conversation of a stateless client: by what the client will resend.

A chat-completions client resends the whole history each turn. The proxy stores the
conversation after each turn under the fingerprint of the history as the client will send it
next (the request's messages plus the answer), so the next request finds it by fingerprinting
its messages before the new ones. A history the proxy never saw (another server, an edited
transcript) is adopted: its turns are attributed to the default label (a turn whose answer holds
an A2UI surface, to the HCP's ``[ui] specialist``) and summarised by the start of their last answer.
"""

import hashlib
import json

from molt.proxy.loop import Conversation, stand_in_summary, text_of
from molt.proxy.views import Message, Turn
from molt.router.structure import has_surface


def canonical(message: Message) -> dict:
    """The parts of a message that define the conversation (not key order, not null fields)."""
    calls = [(c.get("id"), c.get("function", {}).get("name"), c.get("function", {}).get("arguments")) for c in message.get("tool_calls") or []]
    return {"role": message.get("role"), "content": text_of(message), "tool_calls": calls, "tool_call_id": message.get("tool_call_id")}


def fingerprint(messages: list[Message]) -> str:
    data = json.dumps([canonical(m) for m in messages], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()


def adopt(system: list[Message], history: list[Message], label: str, surface_label: str | None = None) -> Conversation:
    """A conversation for a history this proxy never answered: turns are ``label``'s, those whose
    answer holds a surface ``surface_label``'s (when given)."""
    groups: list[list[Message]] = []
    for message in history:
        if message.get("role") == "user" or not groups:
            groups.append([])
        groups[-1].append(message)

    def owner(group: list[Message]) -> str:
        shows = surface_label and any(m.get("role") == "assistant" and has_surface(m) for m in group[1:])
        return surface_label if shows else label

    turns = [Turn(owner(group), group[0], tuple(group[1:]), stand_in_summary(group[-1])) for group in groups]
    pending = turns.pop() if turns and turns[-1].replies and turns[-1].replies[-1].get("tool_calls") else None
    return Conversation(tuple(system), tuple(turns), pending)
