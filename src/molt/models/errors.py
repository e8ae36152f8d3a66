"""Typed errors of base-model loading. Each message names what was expected."""


class ModelLoadError(Exception):
    """Base class: a model source could not be turned into a loaded model."""


class UnknownSourceError(ModelLoadError):
    """The source string is none of the forms molt understands."""


class ModelNotFoundError(ModelLoadError):
    """The source names a file, folder or package that is not there."""


class UnsupportedArchitectureError(ModelLoadError):
    """The model exists but its architecture is not one molt serves and trains."""


class CorruptModelError(ModelLoadError):
    """The files are there but cannot be read as a model (bad header, truncated, missing tensors)."""
