"""Serving an adapter on a running engine over HTTP, whichever engine it is.

- molt's engine and vLLM: ``POST /v1/load_lora_adapter`` ``{lora_name, lora_path, load_inplace}``
  and ``POST /v1/unload_lora_adapter`` ``{lora_name}``; success is plain text, failure OpenAI
  error JSON. vLLM needs ``VLLM_ALLOW_RUNTIME_LORA_UPDATING=true`` for these routes, and before
  0.34 has no ``load_inplace``: a name already loaded is unloaded, then loaded again.
- SGLang: ``POST /load_lora_adapter`` / ``/unload_lora_adapter`` at the server's root, answering
  ``{success, error_message, loaded_adapters}``; a request names an adapter as
  ``model="<base>:<adapter>"`` (``model_name``).
- Every engine lists what it serves at ``GET /v1/models``; an adapter's card has ``parent`` (its
  base) and ``root`` (the path it was loaded from).

molt's engine reads revisions itself; vLLM and SGLang get the revision's folder (PEFT
files: ``adapter_config.json`` + ``adapter_model.safetensors``), so they must see molt's
adapters folder (one machine, or a shared volume).
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from molt.mint.checkpoints import resolve, revision_path

if TYPE_CHECKING:
    from molt.hcp import HCP

ENGINE_KINDS = ("molt", "vllm", "sglang")


class EngineAdapterError(RuntimeError):
    """The engine refused an adapter, or does not serve what the HCP needs."""


@dataclass
class EngineAdapters:
    engine_url: str
    """The engine's OpenAI base URL (``http://host:port/v1``), as in the HCP."""
    kind: str = "molt"
    api_key: str | None = None
    timeout: float = 300.0

    def __post_init__(self) -> None:
        if self.kind not in ENGINE_KINDS:
            raise ValueError(f"unknown engine kind {self.kind!r}; molt speaks to: {', '.join(ENGINE_KINDS)}")
        self.engine_url = self.engine_url.rstrip("/")

    @property
    def root(self) -> str:
        """The server's root, where SGLang's adapter routes live."""
        return self.engine_url.removesuffix("/v1")

    def _request(self, method: str, url: str, **kwargs) -> httpx.Response:
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else None
        try:
            return httpx.request(method, url, headers=headers, **{"timeout": self.timeout, **kwargs})
        except httpx.HTTPError as e:
            raise EngineAdapterError(f"the engine at {self.engine_url} is unreachable: {type(e).__name__} {e}".rstrip()) from e

    def _post(self, url: str, body: dict) -> httpx.Response:
        return self._request("POST", url, json=body)

    def lora_path(self, revision: str) -> str:
        """What the engine is told to load: molt's engine takes the revision, the others its folder."""
        return revision if self.kind == "molt" else folder_of(revision)

    def load(self, name: str, revision: str) -> None:
        """Serve ``revision`` as ``name``, replacing what ``name`` served before."""
        path = self.lora_path(revision)
        if self.kind == "sglang":
            self.unload(name, missing_ok=True)  # SGLang refuses a name it already has
            return self._sglang("load", {"lora_name": name, "lora_path": path})
        reply = self._post(f"{self.engine_url}/load_lora_adapter", {"lora_name": name, "lora_path": path, "load_inplace": True})
        if reply.status_code == 400 and "already been loaded" in reply.text:  # vLLM before 0.34 ignores load_inplace
            self.unload(name)
            reply = self._post(f"{self.engine_url}/load_lora_adapter", {"lora_name": name, "lora_path": path})
        if reply.is_error:
            raise EngineAdapterError(f"the engine refused adapter {name!r} ({path}): HTTP {reply.status_code}: {message_of(reply)}")

    def unload(self, name: str, missing_ok: bool = False) -> None:
        if self.kind == "sglang":
            try:
                return self._sglang("unload", {"lora_name": name})
            except EngineAdapterError as e:
                if missing_ok and "does not exist" in str(e):
                    return
                raise
        reply = self._post(f"{self.engine_url}/unload_lora_adapter", {"lora_name": name})
        if reply.status_code == 404 and missing_ok:
            return
        if reply.is_error:
            raise EngineAdapterError(f"the engine did not unload adapter {name!r}: HTTP {reply.status_code}: {message_of(reply)}")

    def _sglang(self, action: str, body: dict) -> None:
        reply = self._post(f"{self.root}/{action}_lora_adapter", body)
        answer = reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}
        if reply.is_error or not answer.get("success", False):
            raise EngineAdapterError(f"SGLang did not {action} adapter {body['lora_name']!r}: HTTP {reply.status_code}: {answer.get('error_message') or message_of(reply)}")

    def models(self) -> list[dict]:
        reply = self._request("GET", f"{self.engine_url}/models", timeout=30)
        if reply.is_error:
            raise EngineAdapterError(f"{self.engine_url}/models: HTTP {reply.status_code}: {message_of(reply)}")
        return reply.json()["data"]

    def served(self) -> dict[str, str]:
        """Adapters the engine serves: name → the path it was loaded from."""
        return {card["id"]: card.get("root") or "" for card in self.models() if card.get("parent")}

    def bases(self) -> list[str]:
        return [card["id"] for card in self.models() if not card.get("parent")]


def folder_of(revision: str) -> str:
    """A revision's folder: an HCP's ``store/<hash>`` or ``<run>/<name>``, a ``molt://`` path, or a
    folder already (absolute)."""
    return revision if Path(revision).is_absolute() else str(resolve(revision_path(revision)))


def same_folder(a: str | None, b: str) -> bool:
    return a is not None and Path(a).resolve() == Path(b).resolve()


def model_name(kind: str, base: str, adapter: str | None) -> str:
    """What a request names as its model to be answered by ``adapter`` (None: the base)."""
    if adapter is None:
        return base
    return f"{base}:{adapter}" if kind == "sglang" else adapter


def for_hcp(hcp: "HCP") -> EngineAdapters:
    """The adapters of the engine an HCP names (its URL, kind and token)."""
    token_env = hcp.model.engine_api_key_env
    return EngineAdapters(hcp.model.engine_url, hcp.model.engine_kind, os.environ.get(token_env) if token_env else None)


def serve_specialists(hcp: "HCP", adapters: EngineAdapters | None = None) -> list[str]:
    """Load every trained specialist of ``hcp`` into its engine (names it already serves from the
    same path are left alone); the names loaded. The engine must serve the HCP's base by name."""
    adapters = adapters or for_hcp(hcp)
    bases = adapters.bases()
    if hcp.model.base not in bases:
        raise EngineAdapterError(
            f"the engine at {adapters.engine_url} serves {', '.join(map(repr, bases)) or 'no base'}, not the HCP's base {hcp.model.base!r}: "
            "start it with that served name (vLLM: --served-model-name), or set [model] base to what it serves"
        )
    served, loaded = adapters.served(), []
    for s in hcp.specialists:
        if s.adapter and s.revision and not same_folder(served.get(s.adapter), folder_of(s.revision)):
            adapters.load(s.adapter, s.revision)
            loaded.append(s.adapter)
    return loaded


def message_of(reply: httpx.Response) -> str:
    """The error message of an OpenAI-style (nested or flat) or SGLang error body, else the text."""
    try:
        body = reply.json()
    except ValueError:
        return reply.text[:300]
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("message", error))
        return str(body.get("message") or body.get("error_message") or body.get("detail") or body)[:300]
    return str(body)[:300]
