"""MinT: a Tinker-compatible LoRA training API over the resident base.

``import molt.mint as tinker`` and Tinker code runs: ``tinker.ServiceClient()`` trains in this
process, ``tinker.ServiceClient(base_url=...)`` on a ``molt mint serve`` server, and
``tinker.types`` holds the data types.
"""

from molt.mint import types
from molt.mint.clients import SamplingClient, ServiceClient, TrainingClient
from molt.mint.futures import APIFuture
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
    "APIFuture",
    "AdamParams",
    "Datum",
    "EncodedTextChunk",
    "ForwardBackwardOutput",
    "LoraConfig",
    "ModelInput",
    "SamplingClient",
    "SamplingParams",
    "ServiceClient",
    "TensorData",
    "TrainingClient",
    "types",
]
