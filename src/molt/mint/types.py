"""Tinker's data types, same names and semantics, as pydantic models (so they cross HTTP as JSON).

- ``ModelInput`` is a list of token chunks; ``Datum`` pairs it with ``loss_fn_inputs``, a dict of
  tensors aligned to positions: position i of ``model_input`` predicts token i+1 (the caller
  shifts). Everything a loss needs lives in the Datum.
- ``TensorData`` holds a flat list plus dtype and shape; ``Datum`` accepts torch tensors, numpy
  arrays or lists for any input and converts them.
"""

from typing import Any, Literal

import numpy as np
import torch
from pydantic import BaseModel, ConfigDict, Field, field_validator

TensorDtype = Literal["int64", "float32"]


class TensorData(BaseModel):
    data: list[int] | list[float]
    """Values in row-major order."""
    dtype: TensorDtype
    shape: list[int] | None = None
    """None means one dimension of len(data)."""

    @classmethod
    def from_torch(cls, tensor: torch.Tensor) -> "TensorData":
        dtype: TensorDtype = "float32" if tensor.is_floating_point() else "int64"
        return cls(data=tensor.flatten().tolist(), dtype=dtype, shape=list(tensor.shape))

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> "TensorData":
        return cls.from_torch(torch.from_numpy(np.ascontiguousarray(array)))

    def to_torch(self) -> torch.Tensor:
        tensor = torch.tensor(self.data, dtype=torch.float32 if self.dtype == "float32" else torch.int64)
        return tensor.reshape(self.shape) if self.shape is not None else tensor

    def to_numpy(self) -> np.ndarray:
        return self.to_torch().numpy()

    def tolist(self) -> list:
        return self.to_torch().tolist()


class EncodedTextChunk(BaseModel):
    tokens: list[int]
    type: Literal["encoded_text"] = "encoded_text"

    @property
    def length(self) -> int:
        return len(self.tokens)


class ModelInput(BaseModel):
    chunks: list[EncodedTextChunk]

    @classmethod
    def from_ints(cls, tokens: list[int]) -> "ModelInput":
        return cls(chunks=[EncodedTextChunk(tokens=list(tokens))])

    @classmethod
    def empty(cls) -> "ModelInput":
        return cls(chunks=[])

    def to_ints(self) -> list[int]:
        return [t for chunk in self.chunks for t in chunk.tokens]

    @property
    def length(self) -> int:
        return sum(chunk.length for chunk in self.chunks)

    def append_int(self, token: int) -> "ModelInput":
        """A new ModelInput with one more token (inputs are values, never mutated)."""
        return ModelInput(chunks=[*self.chunks, EncodedTextChunk(tokens=[token])])


class Datum(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_input: ModelInput
    loss_fn_inputs: dict[str, TensorData]
    """Per-position tensors the loss needs: target_tokens, weights, logprobs, advantages, ..."""

    @field_validator("loss_fn_inputs", mode="before")
    @classmethod
    def _to_tensor_data(cls, inputs: Any) -> Any:
        if not isinstance(inputs, dict):
            return inputs
        return {key: _as_tensor_data(value) for key, value in inputs.items()}


def _as_tensor_data(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return TensorData.from_torch(value)
    if isinstance(value, np.ndarray):
        return TensorData.from_numpy(value)
    if isinstance(value, list):
        return TensorData.from_torch(torch.tensor(value))
    return value


class SamplingParams(BaseModel):
    max_tokens: int | None = Field(None, ge=1)
    seed: int | None = None
    stop: str | list[str] | list[int] | None = None
    """Stop strings, or stop token ids."""
    temperature: float = Field(1.0, ge=0)
    top_k: int = Field(-1, ge=-1)
    top_p: float = Field(1.0, gt=0, le=1)


class AdamParams(BaseModel):
    learning_rate: float = Field(1e-4, gt=0)
    beta1: float = Field(0.9, ge=0, lt=1)
    beta2: float = Field(0.95, ge=0, lt=1)
    eps: float = Field(1e-12, gt=0)
    weight_decay: float = Field(0.0, ge=0)
    """Decoupled (AdamW) weight decay."""
    grad_clip_norm: float = Field(0.0, ge=0)
    """Clip the global gradient norm to this before the step; 0 turns clipping off."""


class LoraConfig(BaseModel):
    rank: int = Field(32, ge=1)
    seed: int | None = None
    train_unembed: bool = True
    train_mlp: bool = True
    train_attn: bool = True


class ForwardBackwardOutput(BaseModel):
    loss_fn_output_type: str
    loss_fn_outputs: list[dict[str, TensorData]]
    """Per datum: ``logprobs`` of its target tokens under the current weights."""
    metrics: dict[str, float]
    """Includes ``loss:sum``, the summed loss over every datum and token."""
