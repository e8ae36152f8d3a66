"""Router features: the frozen base's hidden states over the user's text, pooled, next to the
turn's structure features (``structure.py``).

The first ``layer`` decoder layers of the base run over the raw text (no chat template: it
carries no information about the label); the state after that layer is mean-pooled over the
tokens and concatenated with the last token's state. Nothing is downloaded: the base is the one
the HCP already serves, and only its first layers are kept in memory.

Design choices:

- **Caps lock is not intent.** A text mostly in capitals is lowercased before the base reads
  it: shouted words tokenise into pieces the base rarely saw, and say nothing about the label.
- **Head and tail of long texts.** A text over ``MAX_TOKENS`` keeps its first and last halves:
  a paragraph of context often ends with the actual ask, and a traceback with the error.
- **Offered functions through the same layers.** Each tool's name, description and parameters
  go through the same forward (cached by their text, since a client offers the same tools every
  turn); ``tool_embedding`` is the best cosine between the request's mean state and a tool's,
  so "a request for one of the offered functions" is visible even without shared words.
- **Standardised before the cosine.** Raw pooled states all point one way (a few huge
  dimensions: every cosine is 0.999), so both sides are first standardised by the training
  texts' mean and spread (``calibrate``), which the router file keeps.
"""

import threading
from collections.abc import Sequence

import torch

from molt.models import load_model
from molt.router.base import RouteRequest
from molt.router.structure import STRUCTURE, structure_vector, tool_text

MAX_TOKENS = 128
TOOL_CACHE = 4096
"""Tool texts whose pooled states are kept (one tensor of hidden_size floats each)."""


def unshouted(text: str) -> str:
    letters = [c for c in text if c.isalpha()]
    return text.lower() if len(letters) >= 8 and sum(c.isupper() for c in letters) > 0.7 * len(letters) else text


class HiddenStateFeatures:
    def __init__(self, base: str, layer: int):
        loaded = load_model(base)
        self.base, self.layer = base, layer
        self.tokenizer = loaded.tokenizer
        model = loaded.model.model  # the decoder, without the LM head
        if not 1 <= layer <= len(model.layers):
            raise ValueError(f"router layer {layer} is outside the base's 1..{len(model.layers)} layers")
        model.layers = model.layers[:layer]
        model.norm = torch.nn.Identity()
        self.model = model.eval().requires_grad_(False)
        self.lock = threading.Lock()  # one forward at a time: the proxy calls this from worker threads

    @property
    def size(self) -> int:
        return 2 * self.model.config.hidden_size

    def ids(self, text: str) -> list[int]:
        ids = self.tokenizer.encode(unshouted(text), add_special_tokens=False) or [self.tokenizer.eos_token_id]
        half = MAX_TOKENS // 2
        return ids if len(ids) <= MAX_TOKENS else ids[:half] + ids[-half:]

    @torch.inference_mode()
    def __call__(self, texts: Sequence[str], batch_size: int = 64) -> torch.Tensor:
        """(len(texts), size) float32 features: the mean state, then the last token's."""
        ids = [self.ids(t) for t in texts]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # batches of similar lengths pad little
        out = torch.zeros(len(ids), self.size)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = self.pooled([ids[i] for i in rows])
        return out

    def pooled(self, ids: list[list[int]]) -> torch.Tensor:
        width = max(map(len, ids))
        tokens = torch.tensor([i + [0] * (width - len(i)) for i in ids])
        mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])
        with self.lock:
            hidden = self.model(input_ids=tokens, attention_mask=mask).last_hidden_state.float()  # (B, T, H)
        lengths = mask.sum(1)
        mean = (hidden * mask[..., None]).sum(1) / lengths[:, None]
        last = hidden[torch.arange(len(ids)), lengths - 1]
        return torch.cat([mean, last], dim=1)


class RouteFeatures:
    """Hidden-state features of the text, then the named structure features, per request."""

    def __init__(self, hidden: HiddenStateFeatures, structure: Sequence[str] = STRUCTURE, center: torch.Tensor | None = None, scale: torch.Tensor | None = None):
        unknown = sorted(set(structure) - set(STRUCTURE))
        if unknown:
            raise ValueError(f"unknown structure features {', '.join(unknown)}; this molt knows {', '.join(STRUCTURE)}")
        self.hidden, self.structure = hidden, tuple(structure)
        half = hidden.size // 2
        self.center = torch.zeros(half) if center is None else center
        """(hidden_size,) subtracted from pooled states before the tool cosine."""
        self.scale = torch.ones(half) if scale is None else scale
        self.tool_states: dict[str, torch.Tensor] = {}

    @property
    def base(self) -> str:
        return self.hidden.base

    @property
    def layer(self) -> int:
        return self.hidden.layer

    @property
    def size(self) -> int:
        return self.hidden.size + len(self.structure)

    def __call__(self, requests: Sequence[RouteRequest]) -> torch.Tensor:
        """(len(requests), size) float32."""
        return self.combine(requests, self.text(requests))

    def text(self, requests: Sequence[RouteRequest]) -> torch.Tensor:
        """(len(requests), hidden.size) the hidden-state features of each request's text."""
        return self.hidden([r.text for r in requests])

    def calibrate(self, text: torch.Tensor) -> None:
        """Standardise the tool cosine by these texts' pooled states (training's ``text(...)``)."""
        means = text[:, : self.hidden.size // 2]
        self.center, self.scale = means.mean(0), means.std(0) + 1e-5
        self.tool_states.clear()

    def combine(self, requests: Sequence[RouteRequest], text: torch.Tensor) -> torch.Tensor:
        """The full features from the text features ``text(requests)`` already computed."""
        structure = torch.tensor([structure_vector(r, self.structure) for r in requests], dtype=torch.float32).reshape(len(requests), len(self.structure))
        if "tool_embedding" in self.structure:
            structure[:, self.structure.index("tool_embedding")] = self.tool_similarity(requests, text[:, : self.hidden.size // 2])
        return torch.cat([text, structure], dim=1)

    def tool_similarity(self, requests: Sequence[RouteRequest], means: torch.Tensor) -> torch.Tensor:
        """(len(requests),) the best cosine between each request's mean state and its tools'; 0 without tools."""
        texts = [[tool_text(t) for t in r.tools] for r in requests]
        states = self.states_for({t for row in texts for t in row})
        best = torch.zeros(len(requests))
        for i, row in enumerate(texts):
            if row:
                request = (means[i] - self.center) / self.scale
                best[i] = torch.nn.functional.cosine_similarity(torch.stack([states[t] for t in row]), request[None], dim=-1).max()
        return best

    def states_for(self, texts: set[str]) -> dict[str, torch.Tensor]:
        """Standardised mean states of these texts (offered tools, remembered facts), from the
        cache or one forward. The result is the caller's own: another thread clearing the cache
        cannot break it."""
        cache = self.tool_states
        found = {t: state for t in texts if (state := cache.get(t)) is not None}
        missing = sorted(texts - set(found))
        if missing:
            means = self.hidden(missing)[:, : self.hidden.size // 2]
            computed = dict(zip(missing, (means - self.center) / self.scale))
            if len(cache) + len(computed) > TOOL_CACHE:
                cache.clear()
            cache.update(computed)
            found |= computed
        return found
