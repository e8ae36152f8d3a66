"""One sequence being generated (a request with n samples has n), and what a step emits for it."""

from dataclasses import dataclass, field
from enum import Enum

import torch

from molt.engine.sampler import SamplingParams
from molt.lora.layers import ServingAdapter


class Status(Enum):
    WAITING = "waiting"
    PREFILLING = "prefilling"
    DECODING = "decoding"
    FINISHED = "finished"


@dataclass(frozen=True)
class SequenceOutput:
    request_id: str
    index: int
    """Which of the request's n samples."""
    token_ids: list[int]
    """Tokens added by this step (empty on the final event of a stop-string finish)."""
    logprobs: list[float | None]
    text: str
    """Text added by this step (held back while a multi-byte character is incomplete)."""
    finished: bool
    finish_reason: str | None
    """'stop' (stop token or string), 'length' (max_tokens or context), 'abort'."""
    num_prompt_tokens: int
    num_output_tokens: int
    num_cached_tokens: int
    """Prompt tokens whose K/V came from the prefix cache."""
    prompt_logprobs: list[float | None] | None = None
    """On the first event, when asked for: logprob of each prompt token (None for the first)."""
    routed_experts: torch.Tensor | None = None
    """On the final event, when asked for: (positions, MoE layers, top_k) expert ids, one row per
    token fed to the model (the prompt and every sampled token but the last), as vLLM returns them."""
    routed_weights: torch.Tensor | None = None
    """The gate weight of each of those experts, same shape."""
    sparse_indices: torch.Tensor | None = None
    """Sparse-attention bases: (positions, sparse layers, top_k) positions each token attended to (-1: none)."""


@dataclass(eq=False)
class Sequence:
    request_id: str
    index: int
    prompt_ids: list[int]
    params: SamplingParams
    adapter: ServingAdapter | None
    generator: torch.Generator | None
    status: Status = Status.WAITING
    slot: int | None = None
    num_computed: int = 0
    """Tokens whose K/V are in the slot."""
    num_cached: int = 0
    output_ids: list[int] = field(default_factory=list)
    output_logprobs: list[float | None] = field(default_factory=list)
    prompt_logprobs: list[float | None] | None = None
    leader: "Sequence | None" = None
    """The request's first sample, which prefills the prompt for the others (n > 1)."""
    routes: list[dict[str, torch.Tensor]] = field(default_factory=list)
    """When routing is recorded: per forward, each kind's (T, layers, top_k) for the tokens it fed."""
    emitted_text: str = ""
    emitted_tokens: int = 0
    finish_reason: str | None = None

    @property
    def all_ids(self) -> list[int]:
        return self.prompt_ids + self.output_ids

    @property
    def prefix_root(self) -> str:
        """Prefix-cache namespace: the same tokens under another adapter revision have other K/V."""
        return f"{self.adapter.name}@{self.adapter.revision}" if self.adapter else ""

    def next_text(self, tokenizer) -> tuple[str, bool]:
        """Text not yet emitted, and whether a stop string ended the sequence (the text is cut before it)."""
        full = tokenizer.decode(self.output_ids, skip_special_tokens=True)
        for stop in self.params.stop:
            at = full.find(stop, max(0, len(self.emitted_text) - len(stop) + 1))
            if at != -1:
                return full[len(self.emitted_text) : at], True
        if full.endswith("\ufffd") and self.status is not Status.FINISHED:
            return "", False  # an incomplete UTF-8 sequence: wait for its remaining bytes
        held = max((len(s) - 1 for s in self.params.stop), default=0)
        safe = len(full) - held if self.status is not Status.FINISHED else len(full)
        return full[len(self.emitted_text) : max(safe, len(self.emitted_text))], False
