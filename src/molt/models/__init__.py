"""Base models: one loader for every source, tiny test models, and renderers (chat → tokens)."""

from typing import TYPE_CHECKING

from molt.models.errors import (
    CorruptModelError,
    ModelLoadError,
    ModelNotFoundError,
    UnknownSourceError,
    UnsupportedArchitectureError,
)

if TYPE_CHECKING:
    from molt.models.loader import LoadedModel, load_model, load_tokenizer

_LOADER = ("LoadedModel", "load_model", "load_tokenizer")


def __getattr__(name: str):
    """The loader (torch, transformers: seconds to import) on first use, so that light users of
    this package (request shapes, ``molt registry`` and ``--help``) start fast."""
    if name in _LOADER:
        from molt.models import loader

        return getattr(loader, name)
    raise AttributeError(f"module 'molt.models' has no attribute {name!r}")


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
