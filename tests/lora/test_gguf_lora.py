"""A PEFT adapter written as GGUF LoRA: llama.cpp's names, shapes and scaling, read back with gguf.
Run: pytest tests/lora/test_gguf_lora.py"""

import numpy as np
import pytest
import torch
from gguf import GGUFReader
from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

from molt.lora.format import read_adapter
from molt.lora.gguf_lora import write_gguf_lora
from molt.lora.synthetic import write_random_adapter


@pytest.fixture
def adapter(tiny, tmp_path):
    return read_adapter(write_random_adapter(tmp_path / "a", tiny.model, "tiny", r=4, lora_alpha=8, targets=("q_proj", "k_proj", "down_proj")))


def _tensors(path) -> tuple[GGUFReader, dict[str, np.ndarray]]:
    reader = GGUFReader(path)
    return reader, {t.name: np.asarray(t.data) for t in reader.tensors}


def test_names_shapes_and_alpha(tiny, adapter, tmp_path):
    reader, tensors = _tensors(write_gguf_lora(adapter, tmp_path / "a.gguf", tiny.model.config))
    fields = {name: field.contents() for name, field in reader.fields.items()}
    assert (fields["general.type"], fields["general.architecture"], fields["adapter.type"]) == ("adapter", "llama", "lora")
    assert fields["adapter.lora.alpha"] == pytest.approx(adapter.scaling * adapter.r)
    layers = tiny.model.config.num_hidden_layers
    assert sorted(tensors) == sorted(f"blk.{i}.{t}.weight.lora_{ab}" for i in range(layers) for t in ("attn_q", "attn_k", "ffn_down") for ab in "ab")
    A, B = adapter.weights["model.layers.1.mlp.down_proj"]
    assert np.array_equal(tensors["blk.1.ffn_down.weight.lora_a"], A.numpy())
    assert np.array_equal(tensors["blk.1.ffn_down.weight.lora_b"], B.numpy())


def test_query_and_key_rows_in_the_order_transformers_undoes(tiny, adapter, tmp_path):
    """transformers reverses llama.cpp's rotary row order when it loads a GGUF base; applied to
    the written lora_B it must give back the adapter's own, or the LoRA would hit the wrong rows."""
    _, tensors = _tensors(write_gguf_lora(adapter, tmp_path / "a.gguf", tiny.model.config))
    config = tiny.model.config
    undo = LlamaTensorProcessor(config={"num_attention_heads": config.num_attention_heads, "num_key_value_heads": config.num_key_value_heads})
    for kind, module in (("attn_q", "q_proj"), ("attn_k", "k_proj")):
        written = tensors[f"blk.0.{kind}.weight.lora_b"]
        original = adapter.weights[f"model.layers.0.self_attn.{module}"][1].numpy()
        assert not np.array_equal(written, original)  # permuted on the way out...
        assert np.array_equal(undo.process(written, f"blk.0.{kind}.weight").weights, original)  # ...and back


@pytest.mark.parametrize("dtype,stored_as", [(torch.bfloat16, "BF16"), (torch.float16, "F16")])
def test_half_precision_tensors(tiny, adapter, tmp_path, dtype, stored_as):
    reader, tensors = _tensors(write_gguf_lora(adapter, tmp_path / "a.gguf", tiny.model.config, dtype=dtype))
    assert {t.tensor_type.name for t in reader.tensors} == {stored_as}
    A, B = adapter.weights["model.layers.1.mlp.down_proj"]
    stored = {t.name: t for t in reader.tensors}["blk.1.ffn_down.weight.lora_a"]
    assert [int(n) for n in reversed(stored.shape)] == list(A.shape)  # GGUF lists dimensions innermost first
    values = tensors["blk.1.ffn_down.weight.lora_a"].view(np.uint16 if dtype == torch.bfloat16 else np.float16).reshape(A.shape)
    expected = A.to(dtype).view(torch.int16).numpy().view(np.uint16) if dtype == torch.bfloat16 else A.to(dtype).numpy()
    assert np.array_equal(values, expected)


def test_refuses_what_it_cannot_write(tiny, adapter, tmp_path):
    with pytest.raises(ValueError, match="float32, bfloat16 or float16"):
        write_gguf_lora(adapter, tmp_path / "a.gguf", tiny.model.config, dtype=torch.int8)
