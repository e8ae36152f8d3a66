"""Own-view rendering: byte-deterministic and append-only per adapter (property tests over random
conversations), others' turns collapsed to their summaries.
Run: pytest tests/proxy/test_views.py"""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from molt.proxy.views import PendingSummary, Turn, own_view

LABELS = ["chat", "agent", "coding", "genui"]
SYSTEM = [{"role": "system", "content": "You are molt."}]
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@st.composite
def turns(draw) -> Turn:
    label = draw(st.sampled_from(LABELS))
    replies = []
    for i in range(draw(st.integers(0, 2))):  # tool rounds: a call, then its result
        call = {"id": f"call_{i}", "type": "function", "function": {"name": "lookup", "arguments": json.dumps({"q": draw(text)})}}
        replies += [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": f"call_{i}", "content": draw(text)}]
    replies.append({"role": "assistant", "content": draw(text)})
    return Turn(label, {"role": "user", "content": draw(text)}, tuple(replies), draw(text))


@settings(max_examples=60, deadline=None)
@given(st.lists(turns(), min_size=1, max_size=6), text, st.sampled_from(LABELS))
def test_views_are_deterministic_and_append_only(renderer, history, next_text, label):
    """For every adapter and every turn k: rendering is a function of the stored turns alone (a deep
    copy renders to the same tokens), and the tokens of turn k's request (view + generation
    prompt) are a prefix of turn k+1's, so the engine's prefix cache covers everything already seen."""
    for k in range(len(history)):
        before = renderer.generation_prompt(own_view(SYSTEM, history[:k], label, [history[k].user]))
        again = renderer.generation_prompt(own_view(copy.deepcopy(SYSTEM), copy.deepcopy(history[:k]), label, [copy.deepcopy(history[k].user)]))
        assert before == again
        following = [history[k + 1].user] if k + 1 < len(history) else [{"role": "user", "content": next_text}]
        after = renderer.generation_prompt(own_view(SYSTEM, history[: k + 1], label, following))
        assert after[: len(before)] == before


def test_own_turns_verbatim_others_collapsed_to_their_summary():
    call = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\": \"Oslo\"}"}}
    history = [
        Turn("agent", {"role": "user", "content": "Weather in Oslo?"}, ({"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": "c1", "content": "4C"}, {"role": "assistant", "content": "4C in Oslo."}), "Looked up Oslo: 4C."),
        Turn("chat", {"role": "user", "content": "Thanks!"}, ({"role": "assistant", "content": "You're welcome."},), "Said you're welcome."),
    ]
    now = [{"role": "user", "content": "And tomorrow?"}]
    agent = own_view(SYSTEM, history, "agent", now)
    assert agent == [*SYSTEM, history[0].user, *history[0].replies, history[1].user, {"role": "assistant", "content": "[chat] Said you're welcome."}, *now]
    chat = own_view(SYSTEM, history, "chat", now)
    assert chat == [*SYSTEM, history[0].user, {"role": "assistant", "content": "[agent] Looked up Oslo: 4C."}, history[1].user, *history[1].replies, *now]
    with pytest.raises(PendingSummary, match="'chat' turn"):
        own_view(SYSTEM, [*history[:1], Turn("chat", history[1].user, history[1].replies)], "agent", now)
