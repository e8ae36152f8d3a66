"""Scripted specialists for the proxy tests: 'coder' answers CODE_Q with
CODE_A, 'agent' answers WEATHER_Q (with the WEATHER tool) by calling get_weather(city='Oslo')."""

import json
import tomllib

from molt.engine.config import EngineConfig
from molt.engine.server import create_app
from molt.hcp import default_hcp_path, parse_hcp
from molt.http_server import ServerThread
from molt.lora.synthetic import write_scripted_adapter
from molt.models import load_model
from molt.models.renderer import get_renderer

IDENTITY = [{"role": "system", "content": parse_hcp(tomllib.loads(default_hcp_path().read_text())).prompts.identity}]
CODE_Q = {"role": "user", "content": "How do I sort a list in python?"}
CODE_A = "Use sorted(items)."
WEATHER_Q = {"role": "user", "content": "What is the weather in Oslo?"}
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": "Oslo"})}}]}


def hcp(engine_url: str = "http://127.0.0.1:8001/v1"):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"].update(base="tiny", engine_url=engine_url)
    data["generation"].update(max_tokens=48, temperature=0.0, summary_max_tokens=6)
    for specialist in data["specialists"]:
        specialist["adapter"] = {"coding": "coder", "agent": "agent"}.get(specialist["label"])
    data["router"].update(margin=1e6, guardrails=[{"label": "coding", "keywords": ["python"]}, {"label": "agent", "keywords": ["weather"]}])
    return parse_hcp(data)


def answer_tokens(renderer, message) -> list[int]:
    example = renderer.supervised_example([{"role": "user", "content": "?"}, message])
    return [t for t, w in zip(example.tokens, example.weights) if w]


def write_scripted_adapters(root) -> None:
    tiny = load_model("tiny")
    renderer = get_renderer(tiny.tokenizer)
    write_scripted_adapter(root / "coder", tiny.model, "tiny", renderer.generation_prompt([*IDENTITY, CODE_Q]), answer_tokens(renderer, {"role": "assistant", "content": CODE_A}))
    write_scripted_adapter(root / "agent", tiny.model, "tiny", renderer.generation_prompt([*IDENTITY, WEATHER_Q], [WEATHER]), answer_tokens(renderer, CALL))


def serve_engine(tmp_path_factory):
    root = tmp_path_factory.mktemp("loop-adapters")
    write_scripted_adapters(root)
    tiny = load_model("tiny")
    config = EngineConfig(model="tiny", dtype="float32", adapters_root=root, lora_modules={"coder": "coder", "agent": "agent"})
    with ServerThread(create_app(config, tiny)) as url:
        yield f"{url}/v1"


