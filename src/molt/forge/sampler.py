"""Sampling through an OpenAI-compatible server: molt's engine, or vLLM with runtime LoRA updates.

RL needs the exact tokens and the sampler's logprob of each: ``/v1/completions`` with a token-id
prompt, ``logprobs: 1`` and vLLM's ``return_token_ids``; on a base that routes tokens also the
routing of every token (``return_routed_experts``) for the learner to replay. A new revision is
hot-loaded under the same adapter name (vLLM's ``/v1/load_lora_adapter``), so the next step
samples from it.
"""

from dataclasses import dataclass
from pathlib import Path

import httpx

from molt.engine.adapter_client import EngineAdapterError, EngineAdapters

ROUTING_FIELDS = ("routed_experts", "routed_expert_weights", "sparse_attention_indices")


@dataclass(frozen=True)
class Sample:
    tokens: list[int]
    logprobs: list[float]
    finish_reason: str
    routing: dict[str, list] | None = None
    """The server's routing of prompt + tokens − 1 positions, when asked for, under the names a
    Datum carries it (``molt.mint.routing``): routed_experts, routed_expert_weights,
    sparse_attention_indices."""


class SamplerError(RuntimeError):
    """The sampling server refused or failed a request; the message carries its answer."""


class EngineSampler:
    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 600, routing: bool = False):
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.Client(base_url=base_url.rstrip("/"), timeout=timeout, headers=headers)
        self.adapters = EngineAdapters(base_url, api_key=api_key, timeout=timeout)  # sent a folder, which vLLM reads too
        self.routing = routing

    def sample(self, model: str, prompt: list[int], n: int, max_tokens: int, temperature: float, stop_token_ids: list[int], seed: int | None = None) -> list[Sample]:
        body = {
            "model": model, "prompt": prompt, "n": n, "max_tokens": max_tokens, "temperature": temperature,
            "logprobs": 1, "return_token_ids": True, "stop_token_ids": stop_token_ids, "seed": seed,
        }  # fmt: skip
        if self.routing:
            body["return_routed_experts"] = True
        choices = sorted(self._post("/completions", body)["choices"], key=lambda c: c["index"])
        return [Sample(c["token_ids"], c["logprobs"]["token_logprobs"], c["finish_reason"], self._routing(c)) for c in choices]

    def _routing(self, choice: dict) -> dict[str, list] | None:
        if not self.routing:
            return None
        routing = {key: choice[key] for key in ROUTING_FIELDS if key in choice}
        if not routing:
            raise SamplerError("routing replay is on, but the server returned no routing (is the base a sparse MoE or sparse-attention model?)")
        return routing

    def load_adapter(self, name: str, path: Path) -> None:
        """Serve the revision at ``path`` as ``name`` (replacing the one served before)."""
        try:
            self.adapters.load(name, str(path))
        except EngineAdapterError as e:
            raise SamplerError(str(e)) from e

    def _post(self, route: str, body: dict) -> dict:
        reply = self.http.post(route, json=body)
        if reply.status_code >= 400:
            raise SamplerError(f"{route}: HTTP {reply.status_code}: {reply.text[:300]}")
        return reply.json() if reply.headers.get("content-type", "").startswith("application/json") else {}

    def close(self) -> None:
        self.http.close()
