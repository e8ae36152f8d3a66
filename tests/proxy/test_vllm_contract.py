"""The proxy's contract with its engine, on vLLM's wire format as recorded from vLLM 0.11.0's
protocol definitions (``tests/engine_contract/vllm-0.11.0.json``):

- every request the proxy sends during routed turns, tool calls, streaming and summaries uses
  only endpoints and fields vLLM's OpenAI server accepts;
- a fake vLLM that replays the recording passes the contract, and so does molt's own engine;
- the proxy's turn loop runs on the fake vLLM (routing by prompt logprobs, answers, tool calls,
  streams, summaries), and the pair's adapters are loaded into it (and into a fake SGLang)
  through their own routes, as ``molt up --engine-url`` does.
Run: pytest tests/proxy/test_vllm_contract.py"""

import asyncio
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import httpx
import pytest
import tomli_w

from engine_contract import recording, run_contract
from fake_vllm import FAKE_ANSWER, FakeVLLM
from molt.engine.adapter_client import EngineAdapterError, EngineAdapters, model_name, serve_specialists
from molt.hcp import default_hcp_path
from molt.mint.checkpoints import adapters_root
from molt.models import load_model
from molt.models.renderer import get_renderer
from molt.proxy.loop import Conversation, TurnLoop
from molt.router import LabelScoringRouter
from molt.stack import with_engine
from molt_processes import free_port
from scripted_stack import CODE_Q, IDENTITY, WEATHER, WEATHER_Q, hcp

# The request fields of vLLM's OpenAI-compatible server that molt relies on (a subset of what
# vLLM accepts: OpenAI's own fields plus vLLM's `prompt_logprobs` extra on completions).
VLLM_FIELDS = {
    "/v1/chat/completions": {"model", "messages", "max_tokens", "temperature", "top_p", "tools", "stream", "stream_options"},
    "/v1/completions": {"model", "prompt", "max_tokens", "temperature", "prompt_logprobs"},
}


def turns_sent(engine_url: str) -> tuple[list[tuple[str, dict]], list]:
    """A routed conversation through the proxy's turn loop on ``engine_url``: (the requests it
    sent, [first, second, tool-call, streamed answer, summaries])."""
    sent: list[tuple[str, dict]] = []

    async def record(request: httpx.Request) -> None:
        sent.append((request.url.path, json.loads(request.content)))

    async def main():
        async with httpx.AsyncClient(base_url=engine_url, timeout=60, event_hooks={"request": [record]}) as engine:
            contract, renderer = hcp(engine_url), get_renderer(load_model("tiny").tokenizer)
            loop = TurnLoop(contract, LabelScoringRouter(contract, renderer, engine), engine, renderer)
            first = await loop.run(Conversation(), [CODE_Q])
            second = await loop.run(first.conversation, [{"role": "user", "content": "Hello again"}])
            called = await loop.run(Conversation(), [WEATHER_Q], tools=[WEATHER])  # the agent adapter is scripted for a fresh chat
            call_id = called.message["tool_calls"][0]["id"]
            plan = await loop.plan(called.conversation, [{"role": "tool", "tool_call_id": call_id, "content": "4C"}], tools=[WEATHER])
            streamed = [chunk async for chunk in loop.answer_stream(plan)]
            await asyncio.gather(*loop.summaries.values())
            summaries = [t.summary or await t.writing for t in second.conversation.turns]  # what the next views show of each turn
            return [first, second, called, streamed, summaries]

    return sent, asyncio.run(main())


def test_the_proxy_speaks_only_vllm_to_the_engine(engine_url):
    sent, (_, second, _, _, _) = turns_sent(engine_url)
    assert second.decision.label == "chat"
    paths = {path for path, _ in sent}
    assert paths == set(VLLM_FIELDS)  # routing used completions; answers and summaries used chat
    for path, body in sent:
        assert set(body) <= VLLM_FIELDS[path], (path, set(body) - VLLM_FIELDS[path])
        if path == "/v1/completions":
            assert body["prompt_logprobs"] == 0 and all(isinstance(p, list) and all(isinstance(t, int) for t in p) for p in body["prompt"])
    assert any(body.get("stream") for _, body in sent) and any(body.get("tools") for _, body in sent)


# The tool-call exchanges, sent with a conversation molt's scripted 'agent' adapter answers with a call.
TOOL_REQUEST = {"messages": [*IDENTITY, WEATHER_Q], "tools": [WEATHER]}


def contract_run(base_url: str, names: dict[str, str]) -> dict[str, list[str]]:
    return run_contract(base_url, names, {"chat_tool_call": TOOL_REQUEST, "chat_stream_tool_call": TOOL_REQUEST})


def test_the_fake_vllm_passes_the_recorded_contract(tmp_path):
    """The recording holds every part of the API molt relies on, and the fake replays it."""
    (tmp_path / "adapter_config.json").write_text("{}")
    assert {e["name"] for e in recording()["exchanges"]} >= {
        "models", "models_with_adapter", "load_adapter", "load_adapter_again", "unload_adapter", "unload_unknown_adapter",
        "completion_prompt_logprobs", "chat", "chat_tool_call", "chat_stream", "chat_stream_tool_call", "unknown_model", "missing_messages",
    }  # fmt: skip
    with FakeVLLM("base-model") as url:
        results = contract_run(url.removesuffix("/v1"), {"base": "base-model", "adapter": "contract-lora", "adapter_path": str(tmp_path)})
    assert results == {name: [] for name in results}


def test_molt_engine_passes_the_recorded_contract(engine_url):
    """molt's engine answers every exchange as vLLM does (the adapter loaded is the scripted agent)."""
    results = contract_run(engine_url.removesuffix("/v1"), {"base": "tiny", "adapter": "contract-agent", "adapter_path": "agent"})
    assert results == {name: [] for name in results}


def test_the_contract_check_catches_a_different_wire_format(engine_url):
    """The check fails where an engine's answer differs: a flat error body, a missing field."""
    from engine_contract import exchange, problems

    recorded = exchange("unknown_model")
    flat = httpx.Response(404, json={"object": "error", "message": "The model `x` does not exist.", "type": "NotFoundError", "param": None, "code": 404})
    assert problems(recorded, flat) == ["error.message: missing", "error.type: missing", "error.code: missing"]
    chat = exchange("chat")
    no_usage = httpx.Response(200, json={**chat["response"]["body"], "usage": None})
    assert "usage.prompt_tokens: missing" in problems(chat, no_usage)
    text_content = {**chat["response"]["body"], "choices": [{**chat["response"]["body"]["choices"][0], "message": {"role": "assistant", "content": 3}}]}
    assert problems(chat, httpx.Response(200, json=text_content)) == ["choices[].message.content: ['number'] where vLLM sends ['string']"]


def test_the_proxy_runs_on_the_fake_vllm(tmp_path):
    """Routing by prompt logprobs, an answer, a tool call, a streamed answer after the tool result
    and the summaries, all parsed from vLLM's wire format."""
    with FakeVLLM("tiny") as url:
        adapters = EngineAdapters(url, "vllm")
        for name in ("coder", "agent"):  # the HCP's adapters, served by name as `molt up --engine-url` loads them
            adapters.load(name, str(write_peft_stub(tmp_path / name)))
        sent, (first, second, called, streamed, summaries) = turns_sent(url)
    assert first.message["content"] == FAKE_ANSWER and second.message["content"] == FAKE_ANSWER
    assert called.message["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in streamed if c.get("choices")) == FAKE_ANSWER
    assert streamed[-1]["usage"]["completion_tokens"] > 0 and summaries and all(s == FAKE_ANSWER for s in summaries)
    assert any(path == "/v1/completions" for path, _ in sent)  # routed by the engine's prompt logprobs


def write_peft_stub(folder: Path) -> Path:
    """A folder an engine takes as an adapter path (the fake checks for adapter_config.json)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text("{}")
    return folder


def with_revisions(contract, run: str):
    """The scripted HCP with its 'coder' and 'agent' specialists at revisions molt://RUN/<adapter>,
    whose folders exist under molt's adapters root."""
    specialists = []
    for s in contract.specialists:
        if s.adapter:
            write_peft_stub(adapters_root() / run / s.adapter)
            s = s.model_copy(update={"revision": f"molt://{run}/{s.adapter}"})
        specialists.append(s)
    return contract.model_copy(update={"specialists": specialists})


@pytest.mark.parametrize("kind", ["vllm", "sglang"])
def test_the_pair_is_loaded_through_the_engines_own_routes(kind):
    with FakeVLLM("tiny", kind) as url:
        fake = FakeVLLM.last
        pair = with_revisions(with_engine(hcp(url), url, kind), "r1")
        assert sorted(serve_specialists(pair)) == ["agent", "coder"]
        assert fake.adapters == {"coder": str(adapters_root() / "r1" / "coder"), "agent": str(adapters_root() / "r1" / "agent")}
        cards = {c["id"]: c for c in EngineAdapters(url, kind).models()}
        assert cards["coder"]["parent"] == "tiny" and cards["coder"]["root"] == fake.adapters["coder"]
        assert serve_specialists(pair) == []  # served already, from the same folders
        successor = with_revisions(pair, "r2")  # a promoted pair: the same names, new revisions
        assert sorted(serve_specialists(successor)) == ["agent", "coder"] and fake.adapters["agent"] == str(adapters_root() / "r2" / "agent")
        with pytest.raises(EngineAdapterError, match="refused|did not load"):
            EngineAdapters(url, kind).load("ghost", str(adapters_root() / "nowhere"))
        ask = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4}
        assert httpx.post(f"{url}/chat/completions", json={**ask, "model": model_name(kind, "tiny", "coder")}).status_code == 200
        if kind == "sglang":  # SGLang names an adapter as base:adapter; the proxy asks it that way
            assert httpx.post(f"{url}/chat/completions", json={**ask, "model": "coder"}).status_code == 404
            assert model_name("sglang", "tiny", None) == "tiny" and model_name("vllm", "tiny", "coder") == "coder"


def test_an_engine_serving_another_base_is_refused_clearly():
    with FakeVLLM("Qwen/Qwen3-1.7B") as url:
        with pytest.raises(EngineAdapterError, match="serves 'Qwen/Qwen3-1.7B', not the HCP's base 'tiny'.*--served-model-name"):
            serve_specialists(with_engine(hcp(url), url, "vllm"))
    with pytest.raises(EngineAdapterError, match="unreachable"):
        serve_specialists(with_engine(hcp(url), url, "vllm"))


def test_molt_up_serves_through_an_external_engine(tmp_path):
    """``molt up --engine-url``: no engine of its own; the proxy answers through the fake vLLM."""
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["generation"].update(max_tokens=12, summary_max_tokens=8)
    hcp_file = tmp_path / "tiny.toml"
    hcp_file.write_text(tomli_w.dumps(data))
    with FakeVLLM("tiny") as url:
        fake = FakeVLLM.last
        result = subprocess.run(
            [sys.executable, "-m", "molt", "up", "--hcp", str(hcp_file), "--engine-url", url, "--engine-kind", "vllm", "--port", str(free_port()), "--no-learn"],
            input="Tell me about the river town.\n", capture_output=True, text=True, timeout=300,
        )
    assert result.returncode == 0, result.stderr
    assert f"molt [chat] › {FAKE_ANSWER}" in result.stdout and "engine: " + url in result.stderr
    assert any(path == "/v1/chat/completions" for path, _ in fake.requests)
