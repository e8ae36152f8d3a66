"""DSA-style sparse attention: an indexer picks, for each query, the top-k key positions it
attends to (DeepSeek Sparse Attention's lightning indexer, in miniature).

The indexer scores every earlier position s for query t from the attention's own rotated queries
and keys through small projections, summed over a few indexer heads with per-query weights:

    score[t, s] = Σ_j w[t, j] · (q_I[t, j] · k_I[s]) / sqrt(d_I)

and the layer's softmax runs only over the ``top_k`` best positions (all of them while t < top_k).
The engine (decode and prefill over its KV cache) and MinT's packed training attention call the
same module, so they choose alike; RL records the engine's choice and replays it in training
(``molt.mint.routing``), as for MoE experts.

``tiny:qwen3_dsa`` is a tiny Qwen3 whose layers carry such an indexer (``attach_indexers``).
"""

import torch
from torch import nn


class SparseIndexer(nn.Module):
    def __init__(self, num_heads: int, num_kv_heads: int, head_dim: int, top_k: int, slot: int, index_heads: int = 2, index_dim: int = 16):
        super().__init__()
        self.top_k, self.slot = top_k, slot
        """``slot``: this layer's place among the model's sparse layers (the column of its recorded positions)."""
        self.index_heads, self.index_dim = index_heads, index_dim
        self.wq = nn.Linear(num_heads * head_dim, index_heads * index_dim, bias=False)
        self.wk = nn.Linear(num_kv_heads * head_dim, index_dim, bias=False)
        self.weights = nn.Linear(num_heads * head_dim, index_heads, bias=False)

    def scores(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """q (B, Hq, T, D), k (B, Hkv, L, D) → index scores (B, T, L), float32."""
        B, _, T, _ = q.shape
        queries = q.transpose(1, 2).reshape(B, T, -1).to(self.wq.weight.dtype)
        keys = k.transpose(1, 2).reshape(B, k.shape[2], -1).to(self.wk.weight.dtype)
        iq = self.wq(queries).view(B, T, self.index_heads, self.index_dim).float()
        ik = self.wk(keys).float()  # (B, L, d_I)
        per_head = torch.einsum("bthd,bld->bthl", iq, ik) * self.index_dim**-0.5
        return (self.weights(queries).float()[..., None] * per_head).sum(2)

    def select(self, q: torch.Tensor, k: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
        """The attended positions (B, T, top_k) among the ``allowed`` ones (B, T, L), best first;
        -1 fills the row where fewer than top_k positions are allowed."""
        scores = self.scores(q, k).masked_fill(~allowed, float("-inf"))
        values, positions = scores.topk(min(self.top_k, scores.shape[-1]), dim=-1)
        positions = positions.masked_fill(values == float("-inf"), -1)
        missing = self.top_k - positions.shape[-1]
        return nn.functional.pad(positions, (0, missing), value=-1) if missing else positions


def attended_mask(positions: torch.Tensor, length: int) -> torch.Tensor:
    """(…, top_k) positions (-1: none) → (…, length) bool, True where attended."""
    mask = torch.zeros(*positions.shape[:-1], length + 1, dtype=torch.bool)
    mask.scatter_(-1, positions.long().where(positions >= 0, length), True)  # -1 lands in the extra column
    return mask[..., :length]


def sparse_indexers(model: nn.Module) -> list[SparseIndexer]:
    """The indexer of each sparse-attention layer of a causal LM, in layer order."""
    return [layer.self_attn.indexer for layer in model.get_decoder().layers if hasattr(layer.self_attn, "indexer")]


def attach_indexers(model: nn.Module, top_k: int = 8) -> nn.Module:
    """Give every attention layer of a (tiny) Qwen3 or Llama an indexer, initialised from the
    current RNG, in the model's dtype (every layer is sparse, so a layer's slot is its index)."""
    config = model.config
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    dtype = next(model.parameters()).dtype
    for slot, layer in enumerate(model.get_decoder().layers):
        indexer = SparseIndexer(config.num_attention_heads, config.num_key_value_heads, head_dim, top_k, slot)
        for linear in (indexer.wq, indexer.wk, indexer.weights):
            nn.init.normal_(linear.weight, std=0.5)
        layer.self_attn.indexer = indexer.to(dtype)
    return model
