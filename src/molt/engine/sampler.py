"""Sampling parameters and the per-row sampler.

Logprobs are those of the model's raw distribution (log-softmax of unmodified logits), whatever
temperature/top-p/top-k shaped the choice: that is what RL losses compare against the trainer's
logprobs. Each sequence with a seed owns a torch.Generator, so a seeded request draws the same
tokens alone or inside any batch.
"""

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int = 16
    """Most tokens to generate."""
    temperature: float = 1.0
    """0 is greedy."""
    top_p: float = 1.0
    """Keep the smallest set of tokens whose probability sums to at least this."""
    top_k: int = 0
    """Keep only the k most likely tokens; 0 (or -1) keeps all."""
    seed: int | None = None
    """Seed of this request's own random generator."""
    stop: tuple[str, ...] = ()
    """Strings that end generation; they are not included in the text."""
    stop_token_ids: tuple[int, ...] = ()
    """Token ids that end generation (the model's end-of-turn token is added by the caller)."""
    n: int = 1
    """Independent samples for one prompt."""
    logprobs: bool = False
    """Return the logprob of each sampled token."""
    prompt_logprobs: bool = False
    """Return the logprob of each prompt token given the tokens before it."""
    ignore_eos: bool = False
    """Keep generating past the end-of-turn token (benchmarks: fixed output lengths)."""
    return_routing: bool = False
    """Record each token's routing (MoE experts, sparse-attention positions), for RL's replay."""

    def __post_init__(self) -> None:
        checks = {
            "max_tokens": self.max_tokens >= 1,
            "temperature": self.temperature >= 0,
            "top_p": 0 < self.top_p <= 1,
            "top_k": self.top_k >= -1,
            "n": self.n >= 1,
        }
        for name, ok in checks.items():
            if not ok:
                raise ValueError(f"invalid {name}={getattr(self, name)!r}")


def make_generator(params: SamplingParams, index: int) -> torch.Generator | None:
    """A generator for sample ``index`` of a seeded request; None means the global RNG."""
    if params.seed is None:
        return None
    return torch.Generator().manual_seed(params.seed * 1_000_003 + index)


def sample(logits_BV: torch.Tensor, params_B: list[SamplingParams], generators_B: list[torch.Generator | None]) -> tuple[list[int], list[float | None]]:
    """One token per row, and its raw logprob for the rows that asked for logprobs (None for the
    others: a log-softmax over the vocabulary costs as much as a small projection per step)."""
    tokens = logits_BV.argmax(dim=-1).tolist()
    for b, params in enumerate(params_B):
        if params.temperature > 0:
            tokens[b] = _draw(logits_BV[b], params, generators_B[b])
    chosen: list[float | None] = [None] * len(tokens)
    wanted = [b for b, params in enumerate(params_B) if params.logprobs]
    if wanted:
        rows = torch.tensor(wanted)
        logprobs = torch.log_softmax(logits_BV[rows], dim=-1)[torch.arange(len(wanted)), torch.tensor(tokens)[rows]]
        for b, logprob in zip(wanted, logprobs.tolist()):
            chosen[b] = logprob
    return tokens, chosen


def _draw(logits_V: torch.Tensor, params: SamplingParams, generator: torch.Generator | None) -> int:
    scaled = logits_V / params.temperature
    if params.top_k > 0:
        kth = torch.topk(scaled, min(params.top_k, scaled.numel())).values[-1]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)
    if params.top_p < 1:
        sorted_probs, order = probs.sort(descending=True)
        before = sorted_probs.cumsum(0) - sorted_probs  # mass strictly before each token
        sorted_probs[before >= params.top_p] = 0
        probs = torch.zeros_like(probs).scatter_(0, order, sorted_probs)
    return int(torch.multinomial(probs, 1, generator=generator))
