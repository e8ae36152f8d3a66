"""The engine's adapters: loaded by name from folders inside one root, swapped atomically.

Loading a name again installs a new revision; requests already running hold the old revision
object and finish on it. Every check (path inside the root, PEFT files readable, shapes fit the
base) runs before the name table changes, so a bad adapter never disturbs serving.
"""

import threading
from pathlib import Path

import torch

from molt.lora.format import AdapterError, check_against_base, read_adapter
from molt.lora.layers import Layout, ServingAdapter


class AdapterNotFound(KeyError):
    """No adapter of that name is loaded."""


class AdapterManager:
    def __init__(self, root: Path, base: torch.nn.Module, layout: Layout, dtype: torch.dtype):
        self.root, self.base, self.layout, self.dtype = root.resolve(), base, layout, dtype
        self.adapters: dict[str, ServingAdapter] = {}
        self._revision = 0
        self._lock = threading.Lock()

    def resolve_path(self, path: str) -> Path:
        """``path`` (absolute, relative to the root, or a MinT revision ``molt://<run>/<name>``, which
        lives at ``<run>/<name>`` under the default root) resolved, and refused outside the root."""
        candidate = (self.root / path.removeprefix("molt://")).resolve()
        if not candidate.is_relative_to(self.root):
            raise AdapterError(f"adapter path {path!r} is outside the adapters root {self.root}")
        return candidate

    def load(self, name: str, path: str) -> ServingAdapter:
        if not name.strip():
            raise AdapterError("adapter name must not be empty")
        adapter = read_adapter(self.resolve_path(path), name)
        check_against_base(adapter, self.base)
        with self._lock:
            self._revision += 1
            serving = ServingAdapter.prepare(adapter, self._revision, self.dtype, self.layout)
            self.adapters[name] = serving
        return serving

    def unload(self, name: str) -> None:
        with self._lock:
            if self.adapters.pop(name, None) is None:
                raise AdapterNotFound(name)

    def get(self, name: str) -> ServingAdapter:
        try:
            return self.adapters[name]
        except KeyError:
            raise AdapterNotFound(name) from None

    def names(self) -> list[str]:
        return sorted(self.adapters)

    def resident(self) -> tuple[ServingAdapter, ...]:
        """The current revision of every loaded adapter, in name order."""
        with self._lock:
            return tuple(self.adapters[name] for name in sorted(self.adapters))
