"""The engine's HTTP API driven by the official ``openai`` client against a real server on a free
port, with the tiny model. Run: pytest tests/engine/test_server.py"""

import json
import time

import httpx
import openai
import pytest

from conftest import ADAPTERS
from molt.engine.config import EngineConfig
from molt.engine.server import create_app
from molt.http_server import ServerThread
from molt.lora.synthetic import write_random_adapter, write_scripted_adapter
from molt.models import load_model
from molt.models.renderer import get_renderer

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
ASK = [{"role": "user", "content": "Weather in Paris?"}]
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]}


@pytest.fixture(scope="module")
def server(tiny_root):
    """Engine on the tiny model with four random adapters and 'tool', an adapter scripted to answer
    ASK (with the WEATHER tool offered) by calling get_weather(city='Paris')."""
    tiny = load_model("tiny")
    renderer = get_renderer(tiny.tokenizer)
    example = renderer.supervised_example(ASK + [CALL], [WEATHER])
    answer = [t for t, w in zip(example.tokens, example.weights) if w]
    write_scripted_adapter(tiny_root / "tool", tiny.model, "tiny", renderer.generation_prompt(ASK, [WEATHER]), answer)
    config = EngineConfig(model="tiny", adapters_root=tiny_root, lora_modules={**{n: n for n in ADAPTERS}, "tool": "tool"}, max_model_len=4096)
    app = create_app(config, tiny)
    with ServerThread(app) as url:
        yield url, app.state.service.engine


@pytest.fixture
def client(server):
    return openai.OpenAI(base_url=server[0] + "/v1", api_key="unused", max_retries=0)


def metric(url: str, name: str) -> float:
    for line in httpx.get(url + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise KeyError(name)


def test_models_lists_adapters_with_the_base_as_parent(client):
    models = {m.id: m for m in client.models.list().data}
    assert set(models) == {"tiny", *ADAPTERS, "tool"}
    assert models["tiny"].model_extra["parent"] is None
    assert all(models[a].model_extra["parent"] == "tiny" for a in ADAPTERS)
    assert models["a1"].model_extra["root"].endswith("/a1")


def test_chat_non_streaming_with_logprobs(client):
    reply = client.chat.completions.create(model="a1", messages=[{"role": "user", "content": "hi"}], max_tokens=6, temperature=0, logprobs=True)
    choice = reply.choices[0]
    assert choice.finish_reason == "length" and reply.usage.completion_tokens == 6
    assert len(choice.logprobs.content) == 6 and all(e.logprob <= 0 for e in choice.logprobs.content)
    assert "".join(e.token for e in choice.logprobs.content) == choice.message.content


def test_chat_streaming_equals_non_streaming(client):
    request = dict(model="a2", messages=[{"role": "user", "content": "Tell me a story."}], max_tokens=12, temperature=0.8, seed=11)
    whole = client.chat.completions.create(**request).choices[0].message.content
    chunks = list(client.chat.completions.create(**request, stream=True, stream_options={"include_usage": True}))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == whole
    assert chunks[-2].choices[0].finish_reason == "length" and chunks[-1].usage.completion_tokens == 12


def test_tool_call_is_parsed_into_openai_tool_calls(client):
    reply = client.chat.completions.create(model="tool", messages=ASK, tools=[WEATHER], temperature=0)
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == {"city": "Paris"}
    streamed = list(client.chat.completions.create(model="tool", messages=ASK, tools=[WEATHER], temperature=0, stream=True))
    calls = [c for chunk in streamed if chunk.choices for c in chunk.choices[0].delta.tool_calls or []]
    assert [c.function.name for c in calls] == ["get_weather"] and streamed[-1].choices[0].finish_reason == "tool_calls"
    follow_up = ASK + [choice.message.model_dump(exclude_none=True), {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 18}'}]
    assert client.chat.completions.create(model="tool", messages=follow_up, tools=[WEATHER], max_tokens=3).choices[0].message is not None


def test_completions_with_token_ids_and_prompt_logprobs(client):
    reply = client.completions.create(
        model="a0", prompt=[1, 4093, 198, 6004], max_tokens=5, temperature=0, logprobs=1,
        extra_body={"prompt_logprobs": 0, "return_token_ids": True},
    )
    choice = reply.choices[0]
    extra = choice.model_extra
    assert extra["prompt_token_ids"] == [1, 4093, 198, 6004] and len(extra["token_ids"]) == 5
    assert extra["prompt_logprobs"][0] is None and len(extra["prompt_logprobs"]) == 4
    assert [list(p) for p in extra["prompt_logprobs"][1:]] == [["4093"], ["198"], ["6004"]]  # vLLM's shape
    assert all(p[t]["logprob"] <= 0 for p, t in zip(extra["prompt_logprobs"][1:], ["4093", "198", "6004"]))
    assert len(choice.logprobs.token_logprobs) == 5
    batch = client.completions.create(model="tiny", prompt=["Hello", "Goodbye"], max_tokens=3, n=2)
    assert sorted(c.index for c in batch.choices) == [0, 1, 2, 3]
    streamed = list(client.completions.create(model="tiny", prompt="Hello", max_tokens=4, stream=True))
    assert streamed[-1].choices[0].finish_reason == "length"


def test_errors_are_openai_json(client, server):
    with pytest.raises(openai.NotFoundError) as e:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
    assert e.value.body["message"] == "The model `nope` does not exist." and e.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError, match="temperature"):
        client.chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], temperature=5)
    with pytest.raises(openai.BadRequestError, match=r"messages\[0\]\.role: Input should be 'system', 'user', 'assistant' or 'tool'"):
        client.chat.completions.create(model="tiny", messages=[{"role": "robot", "content": "hi"}])
    raw = httpx.post(server[0] + "/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert raw.status_code == 400 and raw.json()["error"]["type"] == "BadRequestError"
    missing = httpx.post(server[0] + "/v1/completions", json={"model": "tiny"})
    assert missing.status_code == 400 and missing.json()["error"]["param"] == "prompt"
    too_long = httpx.post(server[0] + "/v1/completions", json={"model": "tiny", "prompt": [5] * 5000})
    assert too_long.status_code == 400 and "max_model_len is 4096" in too_long.json()["error"]["message"]


def test_load_and_unload_adapter_routes(client, server, tiny_root):
    url = server[0]
    write_random_adapter(tiny_root / "extra", load_model("tiny").model, "tiny", r=2, seed=5)
    loaded = httpx.post(url + "/v1/load_lora_adapter", json={"lora_name": "extra", "lora_path": "extra"})
    assert loaded.status_code == 200 and "extra" in loaded.text
    again = httpx.post(url + "/v1/load_lora_adapter", json={"lora_name": "extra", "lora_path": "extra"})
    assert again.status_code == 400 and "already been loaded" in again.json()["error"]["message"]  # as vLLM answers
    assert httpx.post(url + "/v1/load_lora_adapter", json={"lora_name": "extra", "lora_path": "extra", "load_inplace": True}).status_code == 200
    assert client.chat.completions.create(model="extra", messages=[{"role": "user", "content": "x"}], max_tokens=2).usage.completion_tokens == 2
    assert httpx.post(url + "/v1/unload_lora_adapter", json={"lora_name": "extra"}).status_code == 200
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="extra", messages=[{"role": "user", "content": "x"}], max_tokens=2)
    assert httpx.post(url + "/v1/unload_lora_adapter", json={"lora_name": "extra"}).status_code == 404


@pytest.mark.parametrize(
    "path,message",
    [("../outside", "outside the adapters root"), ("/etc", "outside the adapters root"), ("absent", "no adapter folder")],
)
def test_bad_adapter_is_refused_and_serving_continues(client, server, path, message):
    response = httpx.post(server[0] + "/v1/load_lora_adapter", json={"lora_name": "bad", "lora_path": path})
    assert response.status_code == 400 and message in response.json()["error"]["message"]
    assert client.chat.completions.create(model="a0", messages=[{"role": "user", "content": "x"}], max_tokens=2).choices


def test_adapter_of_another_base_is_refused(server, tiny_root):
    write_random_adapter(tiny_root / "qwen", load_model("tiny:qwen3").model, "tiny:qwen3", r=2, targets=("gate_proj",))
    qwen = load_model("tiny:qwen3").model
    qwen.model.layers[0].mlp.gate_proj = __import__("torch").nn.Linear(64, 99, bias=False)
    write_random_adapter(tiny_root / "wrong", qwen, "other", r=2, targets=("gate_proj",))
    response = httpx.post(server[0] + "/v1/load_lora_adapter", json={"lora_name": "wrong", "lora_path": "wrong"})
    assert response.status_code == 400 and "trained on another base" in response.json()["error"]["message"]


def test_client_disconnect_cancels_the_request(server):
    """A long generation whose client goes away must stop: the slot is freed and far fewer tokens
    are generated than were asked for."""
    url, engine = server
    before = metric(url, "molt_generation_tokens_total")
    body = {"model": "tiny", "messages": [{"role": "user", "content": "go"}], "max_tokens": 3000, "stream": True}
    with httpx.stream("POST", url + "/v1/chat/completions", json=body) as response:
        for n, _ in enumerate(response.iter_lines()):
            if n > 5:
                break
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(url + "/v1/chat/completions", json={**body, "stream": False}, timeout=1.0)
    deadline = time.monotonic() + 10
    while metric(url, "molt_requests_running") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metric(url, "molt_requests_running") == 0
    assert metric(url, "molt_generation_tokens_total") - before < 2000
    assert not engine.decoding and engine.prefilling == []


def test_health_and_metrics(server):
    assert httpx.get(server[0] + "/health").status_code == 200
    text = httpx.get(server[0] + "/metrics").text
    for name in ("molt_prefix_cache_hit_tokens_total", "molt_prefix_cache_miss_tokens_total", "molt_requests_running"):
        assert f"# TYPE {name}" in text


def test_routed_experts_need_a_moe_base(server):
    reply = httpx.post(server[0] + "/v1/completions", json={"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 2, "return_routed_experts": True})
    assert reply.status_code == 400 and "no MoE or sparse-attention layers" in reply.json()["error"]["message"]
