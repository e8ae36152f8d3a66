"""MinT: a Tinker-compatible LoRA training API over the resident base (types and losses so far)."""

from molt.mint.types import (
    AdamParams,
    Datum,
    EncodedTextChunk,
    ForwardBackwardOutput,
    LoraConfig,
    ModelInput,
    SamplingParams,
    TensorData,
)

__all__ = [
    "AdamParams",
    "Datum",
    "EncodedTextChunk",
    "ForwardBackwardOutput",
    "LoraConfig",
    "ModelInput",
    "SamplingParams",
    "TensorData",
]
