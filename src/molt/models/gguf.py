"""GGUF file → safetensors model folder in molt's cache, converted once.

- transformers does the dequantisation and the GGUF→Hugging Face tensor mapping (including the
  llama q/k permutation); this module decides when to convert and where the result lives.
- The cache key is the file's resolved path, size and modification time: an unchanged file never
  converts twice, a replaced one converts again.
- Conversion is interrupt-safe (``home.build_once``): a killed run leaves no half-written model.
- The tokenizer is cached on its own, so tests can pair it with a tiny random model without
  dequantising any weights.
"""

import hashlib
import json
import time
from pathlib import Path

import torch
from gguf import GGUFReader
from rich.console import Console
from transformers import AutoModelForCausalLM, AutoTokenizer

from molt import __version__
from molt.home import build_once, cache_dir
from molt.models.architectures import check_model_type
from molt.models.errors import CorruptModelError
from molt.models.hf_progress import hf_progress_bars

MANIFEST = "molt-source.json"
"""Written into every converted folder: where it came from and how long conversion took."""

console = Console(stderr=True)


def gguf_model_type(path: Path) -> str:
    """The architecture recorded in a GGUF file's header, checked against molt's supported set."""
    try:
        reader = GGUFReader(path)
        field = reader.fields["general.architecture"]
        arch = bytes(field.parts[field.data[0]]).decode()
    except KeyError:
        raise CorruptModelError(f"{path}: GGUF header has no general.architecture field") from None
    except Exception as e:  # gguf raises ValueError, struct.error, IndexError... on damaged files
        raise CorruptModelError(f"{path}: not a readable GGUF file ({type(e).__name__}: {e})") from e
    return check_model_type(arch, str(path))


def cache_key(path: Path) -> str:
    stat = path.stat()
    digest = hashlib.sha256(f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}".encode()).hexdigest()
    return f"{path.stem.lower()}-{digest[:12]}"


def tokenizer_dir(path: Path) -> Path:
    """Folder holding the GGUF file's tokenizer in Hugging Face format (built on first use)."""
    final = cache_dir("tokenizers") / cache_key(path)

    def build(tmp: Path) -> None:
        gguf_model_type(path)
        tokenizer = _read_gguf(AutoTokenizer, path)
        tokenizer.save_pretrained(tmp)

    build_once(final, build)
    return final


def converted_dir(path: Path) -> tuple[Path, bool]:
    """Folder holding the GGUF model as float32 safetensors; True when this call converted it."""
    final = cache_dir("models") / cache_key(path)

    def build(tmp: Path) -> None:
        start = time.perf_counter()
        tokenizer = tokenizer_dir(path)
        console.print(f"[bold]Converting[/] {path.name} to safetensors (once) → {final}")
        model = _read_gguf(AutoModelForCausalLM, path, dtype=torch.float32, show_progress=True)
        # The weights are dequantised now: drop the GGUF marker so the folder loads as plain safetensors.
        model.hf_quantizer = None
        del model.config.quantization_config
        model.save_pretrained(tmp)
        AutoTokenizer.from_pretrained(tokenizer).save_pretrained(tmp)
        manifest = {
            "source": str(path.resolve()),
            "size": path.stat().st_size,
            "mtime_ns": path.stat().st_mtime_ns,
            "converted_seconds": round(time.perf_counter() - start, 2),
            "molt_version": __version__,
        }
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2))
        console.print(f"[green]Converted[/] in {manifest['converted_seconds']} s")

    return final, build_once(final, build)


def _read_gguf(cls, path: Path, show_progress: bool = False, **kwargs):
    """``cls.from_pretrained`` on a GGUF file, with transformers' progress bar only when asked."""
    try:
        with hf_progress_bars(show_progress):
            return cls.from_pretrained(str(path.parent), gguf_file=path.name, local_files_only=True, **kwargs)
    except Exception as e:
        raise CorruptModelError(f"{path}: GGUF file could not be converted ({type(e).__name__}: {e})") from e
