"""Base models: one loader for every source, tiny test models, and renderers (chat → tokens)."""

from molt.models.errors import (
    CorruptModelError,
    ModelLoadError,
    ModelNotFoundError,
    UnknownSourceError,
    UnsupportedArchitectureError,
)
from molt.models.loader import LoadedModel, load_model, load_tokenizer

__all__ = [
    "CorruptModelError",
    "LoadedModel",
    "ModelLoadError",
    "ModelNotFoundError",
    "UnknownSourceError",
    "UnsupportedArchitectureError",
    "load_model",
    "load_tokenizer",
]
