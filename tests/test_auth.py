"""Bearer-token auth on every molt server: the engine and MinT (``--api-key`` /
``$MOLT_API_KEY``, like vLLM's) and the proxy talking to an engine that has one. /health stays
open for probes. Run: pytest tests/test_auth.py"""

import httpx
import openai
import pytest

from molt.engine.config import EngineConfig
from molt.engine.server import create_app as create_engine_app
from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.mint.clients import ServiceClient
from molt.mint.server import create_app as create_mint_app
from molt.mint.service import LocalService, MintLimits
from molt.models import load_model
from molt.proxy.server import create_app as create_proxy_app

TOKEN = "engine-s3cret"


@pytest.fixture(scope="module")
def engine_url():
    with ServerThread(create_engine_app(EngineConfig(model="tiny", dtype="float32"), load_model("tiny"), token=TOKEN)) as url:
        yield url


def test_the_engine_wants_its_token(engine_url):
    assert httpx.get(f"{engine_url}/v1/models").status_code == 401
    assert httpx.get(f"{engine_url}/v1/models", headers={"authorization": "Bearer wrong"}).status_code == 401
    assert httpx.get(f"{engine_url}/health").status_code == 200
    reply = openai.OpenAI(base_url=f"{engine_url}/v1", api_key=TOKEN).chat.completions.create(model="tiny", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert reply.choices[0].message.content is not None


def test_the_proxy_sends_the_engines_token_from_the_environment(engine_url, monkeypatch):
    from scripted_hcp import tiny_hcp

    data = tiny_hcp(f"{engine_url}/v1").model_dump(exclude_none=True)
    data["model"]["engine_api_key_env"] = "MOLT_TEST_ENGINE_TOKEN"
    monkeypatch.delenv("MOLT_TEST_ENGINE_TOKEN", raising=False)
    with pytest.raises(ValueError, match="MOLT_TEST_ENGINE_TOKEN, which is not set"):
        create_proxy_app(parse_hcp(data))
    monkeypatch.setenv("MOLT_TEST_ENGINE_TOKEN", TOKEN)
    with ServerThread(create_proxy_app(parse_hcp(data))) as url:
        reply = openai.OpenAI(base_url=f"{url}/v1", api_key="unused").chat.completions.create(model="chat", messages=[{"role": "user", "content": "hi"}], max_tokens=2)
    assert reply.model_extra["molt"]["specialist"] == "chat"


def test_mint_wants_its_token_and_the_client_sends_it(monkeypatch):
    with ServerThread(create_mint_app(LocalService(limits=MintLimits(bases=("tiny",))), token="mint-s3cret")) as url:
        assert httpx.post(f"{url}/api/v1/create_model", json={}).status_code == 401
        with pytest.raises(Exception, match="wrong API key"):
            ServiceClient(base_url=url).create_lora_training_client("tiny", rank=4)
        monkeypatch.setenv("MOLT_API_KEY", "mint-s3cret")
        training = ServiceClient(base_url=url).create_lora_training_client("tiny", rank=4)
        assert ":train:" in training.model_id
