"""Engine configuration: one pydantic model, every field with a default and a docstring."""

import platform
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from molt.home import molt_home

if TYPE_CHECKING:
    import torch


def native_bf16() -> bool:
    """True when this CPU computes bf16 natively (avx512_bf16 or AMX on x86, bf16 on Arm)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.machine() == "arm64"
    return any(flag in flags for flag in (" avx512_bf16", " amx_bf16", " bf16"))


class EngineConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True, extra="forbid", frozen=True)

    model: str = "embedded"
    """Base model source: 'embedded', 'tiny', a Hugging Face folder or a .gguf file."""
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Serving dtype; 'auto' is bfloat16 where the CPU has native bf16, else float32."""
    kv_cache_dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """Dtype of cached keys/values; 'auto' is float32: CPU attention runs ~1.6x faster in float32
    than in bfloat16 (measured), at twice the cache memory. Use bfloat16 to halve the cache."""
    max_num_seqs: int = Field(16, ge=1)
    """Most sequences decoded together in one batch."""
    max_model_len: int = Field(2048, ge=16)
    """Most tokens (prompt + output) of one sequence; sizes each KV-cache slot."""
    max_prefill_chunk: int = Field(256, ge=1)
    """Most prompt tokens prefilled per engine step, so running sequences keep decoding."""
    prefix_cache_mb: int = Field(512, ge=0)
    """Memory for K/V blocks kept after requests finish (the prefix cache); 0 turns it off."""
    prefix_block_size: int = Field(16, ge=1)
    """Tokens per prefix-cache block."""
    adapters_root: Path = Field(default_factory=lambda: molt_home() / "adapters")
    """Adapter paths in load requests must resolve inside this folder."""
    lora_modules: dict[str, str] = {}
    """Adapters loaded at start: name → folder (relative to adapters_root, or inside it)."""
    packed_weights: bool = True
    """Pack projection weights for oneDNN once at start (faster matmuls, identical results)."""
    served_model_name: str | None = None
    """Name of the base model in the API; defaults to the model source."""

    @model_validator(mode="after")
    def _chunk_fits(self) -> "EngineConfig":
        if self.max_prefill_chunk > self.max_model_len:
            raise ValueError("max_prefill_chunk must not exceed max_model_len")
        return self

    @property
    def torch_dtype(self) -> "torch.dtype":
        import torch  # here, not at the top: `molt --help` reads these fields' docs

        if self.dtype == "auto":
            return torch.bfloat16 if native_bf16() else torch.float32
        return getattr(torch, self.dtype)

    @property
    def torch_kv_cache_dtype(self) -> "torch.dtype":
        import torch

        return torch.float32 if self.kv_cache_dtype == "auto" else getattr(torch, self.kv_cache_dtype)

    @property
    def base_name(self) -> str:
        return self.served_model_name or self.model
