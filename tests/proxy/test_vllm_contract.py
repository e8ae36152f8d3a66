"""The proxy's contract with its engine: every request it sends during routed turns, tool calls,
streaming and summaries uses only endpoints and fields vLLM's OpenAI server accepts, so the
proxy runs unchanged in front of vLLM.
Run: pytest tests/proxy/test_vllm_contract.py"""

import asyncio
import json

import httpx

from molt.models import load_model
from molt.models.renderer import get_renderer
from molt.proxy.loop import Conversation, TurnLoop
from molt.router import LabelScoringRouter
from scripted_stack import CODE_Q, WEATHER, WEATHER_Q, hcp

# The request fields of vLLM's OpenAI-compatible server that molt relies on (a subset of what
# vLLM accepts: OpenAI's own fields plus vLLM's `prompt_logprobs` extra on completions).
VLLM_FIELDS = {
    "/v1/chat/completions": {"model", "messages", "max_tokens", "temperature", "top_p", "tools", "stream", "stream_options"},
    "/v1/completions": {"model", "prompt", "max_tokens", "temperature", "prompt_logprobs"},
}


def test_the_proxy_speaks_only_vllm_to_the_engine(engine_url):
    sent: list[tuple[str, dict]] = []

    async def record(request: httpx.Request) -> None:
        sent.append((request.url.path, json.loads(request.content)))

    async def main():
        async with httpx.AsyncClient(base_url=engine_url, timeout=60, event_hooks={"request": [record]}) as engine:
            contract, renderer = hcp(engine_url), get_renderer(load_model("tiny").tokenizer)
            loop = TurnLoop(contract, LabelScoringRouter(contract, renderer, engine), engine, renderer)
            first = await loop.run(Conversation(), [CODE_Q])
            second = await loop.run(first.conversation, [{"role": "user", "content": "Hello again"}])
            assert second.decision.label == "chat"
            called = await loop.run(Conversation(), [WEATHER_Q], tools=[WEATHER])  # the agent adapter is scripted for a fresh chat
            call_id = called.message["tool_calls"][0]["id"]
            plan = await loop.plan(called.conversation, [{"role": "tool", "tool_call_id": call_id, "content": "4C"}], tools=[WEATHER])
            async for _ in loop.answer_stream(plan):
                pass
            await asyncio.gather(*loop.summaries.values())

    asyncio.run(main())
    paths = {path for path, _ in sent}
    assert paths == set(VLLM_FIELDS)  # routing used completions; answers and summaries used chat
    for path, body in sent:
        assert set(body) <= VLLM_FIELDS[path], (path, set(body) - VLLM_FIELDS[path])
        if path == "/v1/completions":
            assert body["prompt_logprobs"] == 0 and all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in body["prompt"])
    assert any(body.get("stream") for _, body in sent) and any(body.get("tools") for _, body in sent)
