"""One loader for every base-model source (see ``sources.py`` for the forms).

- GGUF files (the embedded model included) are converted once into the cache and then loaded
  like any Hugging Face folder, so the second start reads plain safetensors.
- Only safetensors weights are read: a folder that holds only pickle-based ``.bin`` files is refused.
- Every file is checked before transformers sees it (config JSON, safetensors headers, no missing
  tensors), because transformers would otherwise initialise missing weights at random and carry on.
"""

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from molt.jsonfile import read_json_object
from molt.models.architectures import SPARSE_MOE, check_model_type
from molt.models.embedded import embedded_gguf_path
from molt.models.errors import CorruptModelError, ModelNotFoundError
from molt.models.gguf import converted_dir, tokenizer_dir
from molt.models.hf_progress import hf_progress_bars
from molt.models.sources import resolve_source
from molt.models.tiny import SPARSE_VARIANTS, build_tiny_model

CacheState = Literal["hit", "converted", "none"]


@dataclass(frozen=True)
class LoadedModel:
    source: str
    """The source string it was loaded from."""
    model_type: str
    """Hugging Face ``model_type`` (``llama``, ``qwen3``)."""
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    path: Path | None
    """Folder the weights were read from; None for ``tiny``."""
    cache: CacheState
    """For GGUF sources: read from the cache (``hit``) or converted by this load; else ``none``."""
    load_seconds: float
    """Wall time of this load, conversion included."""

    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def memory_bytes(self) -> int:
        """Bytes held by parameters and buffers (tied weights counted once)."""
        tensors = {t.data_ptr(): t for t in [*self.model.parameters(), *self.model.buffers()]}
        return sum(t.numel() * t.element_size() for t in tensors.values())

    @property
    def dtype(self) -> torch.dtype:
        return next(self.model.parameters()).dtype


def load_model(source: str = "embedded", *, dtype: torch.dtype = torch.float32, seed: int = 0) -> LoadedModel:
    """Load a base model and its tokenizer from any supported source (``seed`` is for ``tiny``)."""
    start = time.perf_counter()
    spec = resolve_source(source)
    cache: CacheState = "none"
    if spec.kind == "tiny":
        tokenizer = load_tokenizer(source)
        model = build_tiny_model(spec.model_type, tokenizer, seed).to(dtype)
        path = None
    else:
        path = spec.path
        if spec.kind == "gguf":
            path, converted = converted_dir(spec.path)
            cache = "converted" if converted else "hit"
        model, tokenizer = load_hf_folder(path, dtype)
    return LoadedModel(
        source=source,
        model_type=model.config.model_type,
        model=model,
        tokenizer=tokenizer,
        path=path,
        cache=cache,
        load_seconds=time.perf_counter() - start,
    )


def tokenizer_folder(source: str = "embedded") -> Path:
    """The Hugging Face folder holding a base model's tokenizer (GGUF sources: the cached extract)."""
    spec = resolve_source(source)
    if spec.kind == "tiny":
        return tokenizer_dir(embedded_gguf_path())
    return tokenizer_dir(spec.path) if spec.kind == "gguf" else spec.path


def load_tokenizer(source: str = "embedded") -> PreTrainedTokenizerBase:
    """The tokenizer of a base model without loading its weights (GGUF sources: from the cached extract)."""
    folder = tokenizer_folder(source)
    try:
        return AutoTokenizer.from_pretrained(folder, local_files_only=True)
    except Exception as e:
        raise ModelNotFoundError(f"{folder}: no usable tokenizer: {e}") from e


def load_hf_folder(path: Path, dtype: torch.dtype) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Model and tokenizer from a Hugging Face folder, after checking every file molt relies on."""
    check_model_type(read_config(path).get("model_type"), str(path))
    check_safetensors(path)
    try:
        with hf_progress_bars(False):
            model, info = AutoModelForCausalLM.from_pretrained(
                path, dtype=dtype, local_files_only=True, output_loading_info=True
            )
    except Exception as e:
        raise CorruptModelError(f"{path}: weights could not be loaded ({type(e).__name__}: {e})") from e
    if info["missing_keys"]:
        missing = sorted(info["missing_keys"])
        raise CorruptModelError(f"{path}: the safetensors files lack {len(missing)} tensors, e.g. {missing[:3]}")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as e:
        raise ModelNotFoundError(
            f"{path}: no usable tokenizer (expected tokenizer.json and tokenizer_config.json): {e}"
        ) from e
    return model.eval(), tokenizer


def has_routing(source: str) -> bool:
    """Whether a base routes tokens (sparse-MoE experts, or sparse attention in the tiny variants):
    what RL's routing replay records and replays. GGUF sources are dense (molt converts only those)."""
    spec = resolve_source(source)
    model_type = spec.model_type if spec.kind == "tiny" else read_config(spec.path).get("model_type") if spec.kind == "hf" else None
    return model_type in SPARSE_MOE or model_type in SPARSE_VARIANTS


def read_config(path: Path) -> dict:
    config = path / "config.json"
    if not config.is_file():
        raise ModelNotFoundError(f"{path}: no config.json; expected a Hugging Face model folder")
    return read_json_object(config, CorruptModelError)


def check_safetensors(path: Path) -> None:
    files = sorted(path.glob("*.safetensors"))
    if not files:
        pickles = sorted(p.name for p in path.glob("*.bin")) + sorted(p.name for p in path.glob("*.pt"))
        refused = f" (found {', '.join(pickles)}: molt never loads pickle-based weights)" if pickles else ""
        raise ModelNotFoundError(f"{path}: no *.safetensors weights{refused}")
    for file in files:
        try:
            with safe_open(file, framework="pt") as f:
                f.keys()
        except Exception as e:
            raise CorruptModelError(f"{file}: not a readable safetensors file ({e})") from e
