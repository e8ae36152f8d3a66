"""Router features: the frozen base's hidden states over the user's text, pooled.

The first ``layer`` decoder layers of the base run over the raw text (no chat template: it
carries no information about the label); the state after that layer is mean-pooled over the
tokens and concatenated with the last token's state. Nothing is downloaded: the base is the one
the HCP already serves, and only its first layers are kept in memory.
"""

import threading

import torch

from molt.models import load_model

MAX_TOKENS = 128


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

    @torch.inference_mode()
    def __call__(self, texts: list[str], batch_size: int = 64) -> torch.Tensor:
        """(len(texts), size) float32 features."""
        rows = []
        for start in range(0, len(texts), batch_size):
            ids = [self.tokenizer.encode(t, add_special_tokens=False)[:MAX_TOKENS] or [self.tokenizer.eos_token_id] for t in texts[start : start + batch_size]]
            width = max(map(len, ids))
            tokens = torch.tensor([i + [0] * (width - len(i)) for i in ids])
            mask = torch.tensor([[1] * len(i) + [0] * (width - len(i)) for i in ids])
            with self.lock:
                hidden = self.model(input_ids=tokens, attention_mask=mask).last_hidden_state.float()
            lengths = mask.sum(1)
            mean = (hidden * mask[..., None]).sum(1) / lengths[:, None]
            last = hidden[torch.arange(len(ids)), lengths - 1]
            rows.append(torch.cat([mean, last], dim=1))
        return torch.cat(rows)
