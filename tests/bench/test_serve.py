"""``molt bench serve`` compares like with like: every configuration runs with the same model
dtype, KV-cache dtype, lengths and batch sizes (a pure function of the bench config), and the
warm-up run reads back the dtypes each one really used. Run: pytest tests/bench/test_serve.py

Pins a bench where the engine kept its KV cache in float32 (its CPU default) while transformers
and PEFT kept theirs in the model dtype (bf16). The toy run in bf16 cannot pass by chance: the
KV dtype is read from each cache after a real generation.
"""

import io

import pytest
from rich.console import Console

from molt.bench.serve import FLOAT32_KV, SIDES, ServeBenchConfig, run, serve_settings
from molt.engine.config import EngineConfig


def shared(s) -> tuple:
    return s.model_dtype, s.kv_cache_dtype, s.prompt_tokens, s.new_tokens, s.batch_sizes, s.decoding


CONFIGS = [ServeBenchConfig(), ServeBenchConfig(dtype="float32", batch_sizes=(2, 8), prompt_tokens=16), ServeBenchConfig(dtype="bfloat16")]


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "float32", "bfloat16"])
def test_every_configuration_gets_the_same_dtypes_and_lengths(config):
    settings = serve_settings(config)
    dtype = str(EngineConfig(dtype=config.dtype).torch_dtype).removeprefix("torch.")  # what the engine serves in
    assert list(settings) == list(SIDES)
    assert {shared(s) for s in settings.values()} == {(dtype, dtype, config.prompt_tokens, config.new_tokens, config.batch_sizes, "greedy, EOS ignored")}
    assert {side: s.adapters for side, s in settings.items()} == {"raw": 0, "base": 0, "mixed": 4, "hf": 0, "peft": 4}


def test_the_float32_kv_engine_is_extra_and_only_where_it_differs():
    settings = serve_settings(ServeBenchConfig(dtype="bfloat16", engine_float32_kv=True))
    assert list(settings) == [*SIDES, *FLOAT32_KV]
    assert {settings[s].kv_cache_dtype for s in SIDES} == {"bfloat16"} and {settings[s].kv_cache_dtype for s in FLOAT32_KV} == {"float32"}
    assert list(serve_settings(ServeBenchConfig(dtype="float32", engine_float32_kv=True))) == list(SIDES)


def test_a_toy_run_in_bf16_keeps_every_kv_cache_in_bf16():
    config = ServeBenchConfig(model="tiny", batch_sizes=(1, 2), prompt_tokens=8, new_tokens=4, conversation_tokens=64, dtype="bfloat16", repeats=1)
    figures = run(config, Console(file=io.StringIO()))
    assert figures["like_for_like"]
    assert figures["observed"] == {side: {"model_dtype": "bfloat16", "kv_cache_dtype": "bfloat16"} for side in SIDES}
    assert figures["settings"]["mixed"] == figures["settings"]["peft"] and figures["mixed_vs_hf_generate"] > 0
    assert "needs a GGUF base" in figures["llama_cpp_skipped"]  # a tiny model has no GGUF file for llama.cpp
