"""PEFT adapter files: what molt writes PEFT reads, and every bad adapter gets a clear error.
Run: pytest tests/lora/test_format.py"""

import json

import pytest
import torch
from peft import PeftModel

from molt.lora.format import AdapterError, check_against_base, read_adapter
from molt.lora.synthetic import random_adapter_weights, write_random_adapter
from molt.models import load_model


@pytest.fixture
def adapter_dir(tiny, tmp_path):
    return write_random_adapter(tmp_path / "a", tiny.model, "tiny", r=4, lora_alpha=8, targets=("q_proj", "down_proj"))


def test_round_trip_and_scaling(tiny, adapter_dir):
    adapter = read_adapter(adapter_dir)
    assert (adapter.name, adapter.r, adapter.scaling) == ("a", 4, 2.0)
    assert sorted(adapter.weights) == [f"model.layers.{i}.{m}" for i in range(2) for m in ("mlp.down_proj", "self_attn.q_proj")]
    check_against_base(adapter, tiny.model)
    written = random_adapter_weights(tiny.model, 4, ("q_proj", "down_proj"))
    for module, (A, B) in written.items():
        assert torch.equal(adapter.weights[module][0], A) and torch.equal(adapter.weights[module][1], B)


def test_rslora_scaling(tiny, tmp_path):
    path = write_random_adapter(tmp_path / "r", tiny.model, "tiny", r=16, lora_alpha=8)
    config = json.loads((path / "adapter_config.json").read_text())
    (path / "adapter_config.json").write_text(json.dumps({**config, "use_rslora": True}))
    assert read_adapter(path).scaling == pytest.approx(8 / 4)


def test_peft_loads_what_molt_writes(adapter_dir):
    """PEFT must see the same tensors: its merged delta equals scaling · B A for one module."""
    model = PeftModel.from_pretrained(load_model("tiny").model, str(adapter_dir))
    layer = model.base_model.model.model.layers[0].self_attn.q_proj
    adapter = read_adapter(adapter_dir)
    A, B = adapter.weights["model.layers.0.self_attn.q_proj"]
    assert torch.allclose(layer.get_delta_weight("default"), adapter.scaling * B @ A)


def test_shape_mismatch_names_the_module(adapter_dir):
    other = load_model("tiny:qwen3").model
    other.model.layers[0].self_attn.q_proj = torch.nn.Linear(64, 32, bias=False)
    with pytest.raises(AdapterError, match=r"model.layers.0.self_attn.q_proj has lora_A \(4, 64\).*trained on another base"):
        check_against_base(read_adapter(adapter_dir), other)


def test_module_the_base_lacks(tiny, tmp_path):
    A, B = torch.zeros(2, 64), torch.zeros(64, 2)
    from molt.lora.format import write_adapter

    path = write_adapter(tmp_path / "x", {"model.layers.9.self_attn.q_proj": (A, B)}, r=2, lora_alpha=2, base_model="tiny")
    with pytest.raises(AdapterError, match="no linear layer 'model.layers.9.self_attn.q_proj'"):
        check_against_base(read_adapter(path), tiny.model)


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda p: (p / "adapter_config.json").unlink(), "no adapter_config.json"),
        (lambda p: (p / "adapter_config.json").write_text("{"), "not valid JSON"),
        (lambda p: (p / "adapter_model.safetensors").unlink(), "no adapter_model.safetensors"),
        (lambda p: (p / "adapter_model.safetensors").write_bytes(b"\x01" * 40), "not a readable safetensors file"),
        (lambda p: _edit_config(p, r=0), "'r' must be a positive integer"),
        (lambda p: _edit_config(p, peft_type="IA3"), "peft_type must be 'LORA'"),
        (lambda p: _edit_config(p, use_dora=True), "use_dora=True is not supported"),
        (lambda p: _edit_config(p, modules_to_save=["lm_head"]), "modules_to_save"),
    ],
)
def test_bad_adapters(adapter_dir, damage, message):
    damage(adapter_dir)
    with pytest.raises(AdapterError, match=message):
        read_adapter(adapter_dir)


def test_missing_folder(tmp_path):
    with pytest.raises(AdapterError, match="no adapter folder"):
        read_adapter(tmp_path / "absent")


def _edit_config(path, **changes):
    config = json.loads((path / "adapter_config.json").read_text())
    (path / "adapter_config.json").write_text(json.dumps({**config, **changes}))
