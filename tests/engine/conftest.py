"""Engines and adapters shared by the engine tests."""

import pytest

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.lora.synthetic import write_random_adapter
from molt.models import load_model

ADAPTERS = ("a0", "a1", "a2", "a3")


@pytest.fixture(scope="session")
def adapters_root(tmp_path_factory, embedded):
    """Four random adapters over the embedded base, strong enough to change its answers. Goes
    through the ``embedded`` fixture, whose first load in the session is the conversion."""
    root = tmp_path_factory.mktemp("adapters")
    base = embedded.model
    for i, name in enumerate(ADAPTERS):
        write_random_adapter(root / name, base, "embedded", r=8, lora_alpha=16, seed=i, std=0.06)
    return root


@pytest.fixture(scope="session")
def embedded_engine(adapters_root):
    config = EngineConfig(
        model="embedded", dtype="float32", adapters_root=adapters_root, lora_modules={n: n for n in ADAPTERS}, max_num_seqs=8
    )
    return LLMEngine(config, load_model("embedded"))


@pytest.fixture(scope="session")
def tiny_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny-adapters")
    base = load_model("tiny").model
    for i, name in enumerate(ADAPTERS):
        write_random_adapter(root / name, base, "tiny", r=4, seed=i, std=0.3)
    return root


def tiny_engine(root, **overrides) -> LLMEngine:
    options = dict(model="tiny", dtype="float32", adapters_root=root, lora_modules={n: n for n in ADAPTERS}, max_num_seqs=8, max_model_len=512)
    return LLMEngine(EngineConfig(**{**options, **overrides}), load_model("tiny"))


def tokens(events) -> list[int]:
    return [t for e in events for t in e.token_ids]
