"""Every loader source (tiny, model folder, GGUF file) and every error path.
Run: pytest tests/models/test_loader.py"""

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from gguf_writer import write_llama_gguf
from molt.models import (
    CorruptModelError,
    ModelNotFoundError,
    UnsupportedArchitectureError,
    load_model,
)
from molt.models.embedded import embedded_gguf_path
from molt.models.gguf import MANIFEST

PROMPT = torch.tensor([[1, 4093, 198, 6004, 2, 198, 1, 520]])


def logits(loaded) -> torch.Tensor:
    with torch.no_grad():
        return loaded.model(PROMPT).logits


@pytest.mark.parametrize("source", ["tiny", "tiny:qwen3"])
def test_tiny_is_seeded_and_deterministic(source):
    a, b, c = load_model(source), load_model(source), load_model(source, seed=1)
    assert a.model_type == source.partition(":")[2] or a.model_type == "llama"
    assert torch.equal(logits(a), logits(b))
    assert not torch.equal(logits(a), logits(c))
    assert len(a.tokenizer) == a.model.config.vocab_size == 49152


def test_tiny_leaves_the_callers_rng_alone():
    """Building a tiny model must not reseed the global RNG a caller relies on."""
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    load_model("tiny")
    assert torch.equal(torch.rand(3), expected)


def test_tiny_dtype_option():
    assert load_model("tiny", dtype=torch.bfloat16).dtype == torch.bfloat16


@pytest.fixture
def folder(tiny, tmp_path) -> Path:
    path = tmp_path / "model"
    tiny.model.save_pretrained(path)
    tiny.tokenizer.save_pretrained(path)
    return path


def test_folder_loads_the_same_model(tiny, folder):
    loaded = load_model(str(folder))
    assert (loaded.path, loaded.cache, loaded.model_type) == (folder, "none", "llama")
    assert torch.equal(logits(loaded), logits(tiny))


def test_folder_without_config(folder):
    (folder / "config.json").unlink()
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        load_model(str(folder))


def test_folder_with_broken_config(folder):
    (folder / "config.json").write_text("{not json")
    with pytest.raises(CorruptModelError, match="config.json: not valid JSON"):
        load_model(str(folder))


def test_folder_with_unsupported_architecture(folder):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    with pytest.raises(UnsupportedArchitectureError, match="'gpt2' is not supported; molt supports llama, qwen3"):
        load_model(str(folder))


def test_folder_with_only_pickle_weights_is_refused(folder):
    (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    with pytest.raises(ModelNotFoundError, match="never loads pickle-based weights"):
        load_model(str(folder))


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_folder_with_corrupt_safetensors(folder, damage):
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(b"\x00" * 64 if damage == "garbage" else data[: len(data) // 2])
    with pytest.raises(CorruptModelError, match="model.safetensors"):
        load_model(str(folder))


def test_folder_missing_a_tensor(folder):
    """transformers would silently initialise a missing weight at random; molt refuses."""
    weights = folder / "model.safetensors"
    tensors = load_file(weights)
    del tensors["model.layers.1.mlp.down_proj.weight"]
    save_file(tensors, weights, metadata={"format": "pt"})
    with pytest.raises(CorruptModelError, match="lack 1 tensors"):
        load_model(str(folder))


def test_folder_without_tokenizer(folder):
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (folder / name).unlink(missing_ok=True)
    with pytest.raises(ModelNotFoundError, match="no usable tokenizer"):
        load_model(str(folder))


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory) -> Path:
    tiny = load_model("tiny")
    return write_llama_gguf(tiny.model, embedded_gguf_path(), tmp_path_factory.mktemp("gguf") / "tiny.gguf")


def test_gguf_file_converts_once_then_loads_from_cache(tiny, tiny_gguf):
    first = load_model(str(tiny_gguf))
    second = load_model(str(tiny_gguf))
    assert (first.cache, second.cache) == ("converted", "hit")
    assert first.path == second.path and (first.path / MANIFEST).is_file()
    assert torch.equal(logits(first), logits(tiny))
    assert torch.equal(logits(second), logits(tiny))
    leftovers = [p.name for p in first.path.parent.iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_gguf_with_unsupported_architecture(tiny, tmp_path):
    path = write_llama_gguf(tiny.model, embedded_gguf_path(), tmp_path / "odd.gguf", architecture="gpt2")
    with pytest.raises(UnsupportedArchitectureError, match="'gpt2' is not supported"):
        load_model(str(path))


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_gguf(tiny_gguf, tmp_path, damage):
    data = tiny_gguf.read_bytes()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10 if damage == "garbage" else data[: len(data) // 3])
    with pytest.raises(CorruptModelError, match="bad.gguf"):
        load_model(str(bad))


def test_interrupted_gguf_conversion_leaves_no_model(tiny_gguf, tmp_path, monkeypatch):
    """Kill the conversion after the weights are read: no cache entry may appear, and the next
    load converts cleanly."""
    import molt.models.gguf as gguf_module

    copy = tmp_path / "copy.gguf"
    shutil.copy(tiny_gguf, copy)

    class InterruptedJson:
        """Stands in for the json module inside molt.models.gguf only: the manifest, written
        after the weights and tokenizer, is the last step before the rename."""

        @staticmethod
        def dumps(*args, **kwargs):
            raise KeyboardInterrupt

    monkeypatch.setattr(gguf_module, "json", InterruptedJson)
    with pytest.raises(KeyboardInterrupt):
        load_model(str(copy))
    models = gguf_module.cache_dir("models")
    assert not (models / gguf_module.cache_key(copy)).exists()
    assert not any(p.name.startswith(f".{gguf_module.cache_key(copy)}") for p in models.iterdir())
    monkeypatch.undo()
    assert load_model(str(copy)).cache == "converted"
