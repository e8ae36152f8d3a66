"""The real embedded model: converted once into the cache, read from the cache afterwards, and
it answers. Run: pytest tests/models/test_embedded.py"""

import json

import pytest
import torch

from molt.models import load_model
from molt.models.gguf import MANIFEST

pytestmark = pytest.mark.embedded


def test_first_load_converts_second_load_reads_the_cache(embedded):
    """The session's MOLT_HOME starts empty, so the fixture's load must have converted; a second
    load must come from the cache with bit-identical weights."""
    assert embedded.cache == "converted"
    manifest = json.loads((embedded.path / MANIFEST).read_text())
    assert manifest["source"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf") and manifest["converted_seconds"] > 0
    assert sorted(p.name for p in embedded.path.glob("*.safetensors")) == ["model.safetensors"]
    again = load_model("embedded")
    assert again.cache == "hit" and again.path == embedded.path
    for (name, a), (_, b) in zip(embedded.model.state_dict().items(), again.model.state_dict().items()):
        assert torch.equal(a, b), name


def test_shape_of_smollm2_135m(embedded):
    config = embedded.model.config
    assert (embedded.model_type, config.num_hidden_layers, config.hidden_size) == ("llama", 30, 576)
    assert embedded.num_parameters == 134_515_008
    assert embedded.dtype == torch.float32


def test_answers_the_capital_of_france(embedded):
    from molt.chat import ChatSession

    answer = ChatSession(embedded).ask("What is the capital of France?")
    assert answer.complete
    assert "Paris" in answer.message["content"]


def test_multi_turn_session_keeps_history(embedded):
    from molt.chat import ChatSession, ChatSettings

    session = ChatSession(embedded, ChatSettings(max_tokens=24, system="You are terse."))
    session.ask("What is the capital of France?")
    session.ask("And of Italy?")
    roles = [m["role"] for m in session.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    session.reset()
    assert session.messages == [{"role": "system", "content": "You are terse."}]
