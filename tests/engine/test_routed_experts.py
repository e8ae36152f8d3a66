"""``return_routed_experts`` on a sparse-MoE base (tiny Qwen3-MoE: 2 layers, 4 experts, top-2),
through the HTTP API: vLLM's shape (prompt + completion − 1 positions), the same routing whether
or not the prompt was prefix-cached, streamed or not. Run: pytest tests/engine/test_routed_experts.py"""

import json

import httpx
import pytest

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.engine.server import create_app
from molt.http_server import ServerThread
from molt.models import load_model

PROMPT = list(range(200, 260))


@pytest.fixture(scope="module")
def url(tiny):
    config = EngineConfig(model="tiny:qwen3_moe", dtype="float32", max_model_len=256, prefix_block_size=16)
    with ServerThread(create_app(config, load_model("tiny:qwen3_moe"))) as url:
        yield url + "/v1"


def complete(url: str, **body) -> dict:
    body = {"model": "tiny:qwen3_moe", "prompt": PROMPT, "max_tokens": 6, "temperature": 0, "return_token_ids": True} | body
    reply = httpx.post(url + "/completions", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_every_fed_token_has_its_experts_and_gates(url):
    choices = complete(url, return_routed_experts=True, n=2, temperature=1.0, seed=5)["choices"]
    for choice in choices:
        experts, gates = choice["routed_experts"], choice["routed_expert_weights"]
        assert len(experts) == len(PROMPT) + len(choice["token_ids"]) - 1
        assert all(len(layers) == 2 and all(len(k) == 2 and len(set(k)) == 2 and set(k) <= {0, 1, 2, 3} for k in layers) for layers in experts)
        assert all(abs(sum(g) - 1) < 1e-5 for layers in gates for g in layers)
    assert "routed_experts" not in complete(url)["choices"][0]  # only when asked


def test_routing_is_the_same_after_the_prompt_was_cached(url):
    """The first request leaves the prompt's K/V in the prefix cache; a routed request recomputes
    them (cached K/V carry no routing) and gets the very same routes."""
    first = complete(url, return_routed_experts=True)["choices"][0]
    plain = complete(url)  # served from the prefix cache
    again = complete(url, return_routed_experts=True)
    assert plain["usage"]["prompt_tokens"] == len(PROMPT)
    assert again["choices"][0]["routed_experts"] == first["routed_experts"]


def test_a_stream_carries_the_routing_on_its_last_choice(url):
    with httpx.stream("POST", url + "/completions", json={"model": "tiny:qwen3_moe", "prompt": PROMPT, "max_tokens": 4, "temperature": 0, "stream": True, "return_routed_experts": True}) as reply:
        events = [json.loads(line[6:]) for line in reply.iter_lines() if line.startswith("data: {")]
    routed = [c for e in events for c in e["choices"] if "routed_experts" in c]
    assert len(routed) == 1 and routed[0]["finish_reason"] == "length"
    assert routed[0]["routed_experts"] == complete(url, max_tokens=4, return_routed_experts=True)["choices"][0]["routed_experts"]


def test_a_prompt_prefilled_in_chunks_records_the_same_routing(tiny):
    """Chunked prefill (16 tokens a step) appends each chunk's rows in order: the same routing as
    one whole-prompt prefill; an aborted routed request finishes cleanly."""
    params = SamplingParams(max_tokens=5, temperature=0, return_routing=True)
    routes = []
    for chunk in (256, 16):
        engine = LLMEngine(EngineConfig(model="tiny:qwen3_moe", dtype="float32", max_model_len=256, max_prefill_chunk=chunk))
        [events] = engine.generate([PROMPT], params)
        routes.append(events[-1].routed_experts)
    assert routes[0].shape == (len(PROMPT) + 4, 2, 2) and routes[0].tolist() == routes[1].tolist()
    engine.add_request("cut", PROMPT, params)
    engine.step()  # one chunk of the prompt
    engine.abort("cut")
    [out] = [o for o in engine.step() if o.request_id == "cut"]
    assert out.finished and out.finish_reason == "abort" and len(out.routed_experts) == 16
