"""The per-turn loop against a live tiny engine: routing, answers from the chosen adapter,
summaries in the background, tool stickiness, and turns that fail leave nothing behind.
Adapters are scripted (closed-form LoRA) so the chosen specialist's answer is known exactly.
Run: pytest tests/proxy/test_loop.py"""

import asyncio

import httpx
import pytest

from scripted_stack import CODE_A, CODE_Q, WEATHER, WEATHER_Q, hcp
from molt.models import load_model
from molt.models.renderer import get_renderer
from molt.proxy.loop import Conversation, EngineError, TurnLoop
from molt.router import LabelScoringRouter, RouteDecision

def run(engine_url: str, steps):
    """Run ``steps(loop)`` with a loop on the engine at ``engine_url``."""
    async def main():
        async with httpx.AsyncClient(base_url=engine_url, timeout=60) as engine:
            contract, renderer = hcp(), get_renderer(load_model("tiny").tokenizer)
            loop = TurnLoop(contract, LabelScoringRouter(contract, renderer, engine), engine, renderer)
            try:
                return await steps(loop)
            finally:
                await loop.aclose()

    return asyncio.run(main())


def test_route_answer_summary_and_the_next_turn_sees_the_summary(engine_url):
    async def steps(loop):
        first = await loop.run(Conversation(), [CODE_Q])
        assert first.decision.label == "coding" and first.message == {"role": "assistant", "content": CODE_A}
        (turn,) = first.conversation.turns
        assert turn.summary is None and not loop.summaries[turn.id].done()  # written after the answer
        second = await loop.run(first.conversation, [{"role": "user", "content": "Thanks!"}])
        return first, second

    first, second = run(engine_url, steps)
    assert second.decision.label == "chat" and second.decision.reason.startswith("abstained")
    coding, chat = second.conversation.turns
    assert coding.summary and coding.label == "coding" and chat.label == "chat"
    assert first.conversation.turns[0].summary is None  # the stored snapshot is never mutated


def test_the_loop_keeps_no_state_per_turn_once_summaries_are_written(engine_url):
    """Summaries travel with their turns: after 12 turns the loop holds nothing, and a later
    turn still sees every summary (memory is bounded by the conversation store alone)."""
    async def steps(loop):
        conversation = Conversation()
        for i in range(6):
            conversation = (await loop.run(conversation, [CODE_Q])).conversation
            conversation = (await loop.run(conversation, [{"role": "user", "content": f"Thanks {i}!"}])).conversation
        in_flight = len(loop.summaries)
        await asyncio.gather(*loop.summaries.values())
        await asyncio.sleep(0)  # done callbacks run on the next loop iteration
        held = dict(loop.summaries)
        last = await loop.run(conversation, [CODE_Q])
        return in_flight, held, last

    in_flight, held, last = run(engine_url, steps)
    assert in_flight >= 1 and held == {}
    turns = last.conversation.turns
    assert len(turns) == 13 and all(t.summary is not None for t in turns if t.label == "chat")  # the tiny model may write ""


def test_tool_results_stick_to_the_calling_adapter(engine_url):
    async def steps(loop):
        called = await loop.run(Conversation(), [WEATHER_Q], tools=[WEATHER])
        assert called.decision.label == "agent" and called.message["tool_calls"][0]["function"]["name"] == "get_weather"
        assert called.conversation.pending is not None and called.conversation.turns == ()
        with pytest.raises(ValueError, match="expected tool results for calls"):
            await loop.run(called.conversation, [{"role": "tool", "tool_call_id": "other", "content": "4C"}], tools=[WEATHER])
        call_id = called.message["tool_calls"][0]["id"]
        result = await loop.run(called.conversation, [{"role": "tool", "tool_call_id": call_id, "content": "4C"}], tools=[WEATHER])
        return called, result

    called, result = run(engine_url, steps)
    assert result.decision.label == "agent" and result.decision.reason.startswith("tool results")
    (turn,) = result.conversation.turns
    assert [m["role"] for m in turn.replies] == ["assistant", "tool", "assistant"] and result.conversation.pending is None


class RecordingRouter:
    """Routes every turn to coding and keeps what it was asked."""

    def __init__(self):
        self.requests = []

    async def route(self, request):
        self.requests.append(request)
        return RouteDecision("coding", "recorded")


def test_the_router_sees_the_turns_tools_and_the_whole_conversation(engine_url):
    """The route call passes the request's tools and every earlier turn in full (the specialist's
    own reply, not a summary): a router reading only the text could not see either."""
    router = RecordingRouter()

    async def main():
        async with httpx.AsyncClient(base_url=engine_url, timeout=60) as engine:
            loop = TurnLoop(hcp(), router, engine, get_renderer(load_model("tiny").tokenizer), summaries=False)
            first = await loop.run(Conversation(), [CODE_Q], tools=[WEATHER])
            await loop.run(first.conversation, [{"role": "user", "content": "Thanks!"}])
            return first

    first = asyncio.run(main())
    opened, thanked = router.requests
    assert opened.text == CODE_Q["content"] and opened.tools == (WEATHER,) and opened.history == ()
    assert thanked.text == "Thanks!" and thanked.tools == () and thanked.history == (CODE_Q, first.message)


def test_a_failed_turn_leaves_nothing_behind():
    async def steps(loop):
        before = Conversation()
        with pytest.raises(EngineError, match="unreachable"):
            await loop.run(before, [CODE_Q])
        return loop.summaries

    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"  # nothing listens once the socket closes
    assert run(dead, steps) == {}


def test_routed_turns_are_logged_only_when_asked(engine_url, tmp_path):
    import json

    log = tmp_path / "routes.jsonl"

    async def steps(loop):
        loop.route_log = log
        called = await loop.run(Conversation(), [WEATHER_Q], tools=[WEATHER])
        call_id = called.message["tool_calls"][0]["id"]
        await loop.run(called.conversation, [{"role": "tool", "tool_call_id": call_id, "content": "{}"}], tools=[WEATHER])
        await loop.run(Conversation(), [CODE_Q], label="chat")

    run(engine_url, steps)
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert lines == [{"text": WEATHER_Q["content"], "label": "agent", "kind": "guardrail", "tools": [WEATHER]}, {"text": CODE_Q["content"], "label": "chat", "kind": "named"}]
