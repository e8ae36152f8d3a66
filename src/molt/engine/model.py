"""The engine's forward pass: Llama / Qwen3 over a batch of cached sequences, with per-row LoRA.

Uses the weights (and norm/rotary modules) of the loaded transformers model, but its own loop:
no per-step cache objects, no generation machinery, the KV cache written in place, and every
linear layer going through ``lora_linear`` so each row can carry its own adapter.

Shapes: B rows, T new tokens per row (B == 1 for a prefill chunk, T == 1 for a decode step),
Hq query heads, Hkv key/value heads, D head dim, L attended length.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from molt.engine.kv_cache import SlotKVCache
from molt.lora.layers import ServingAdapter, group_rows, lora_linear
from molt.models import LoadedModel

ATTENTION, MLP = ("q_proj", "k_proj", "v_proj", "o_proj"), ("gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ModelShape:
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    hidden_size: int
    vocab_size: int


class EngineModel:
    def __init__(self, loaded: LoadedModel, dtype: torch.dtype):
        self.model = loaded.model.to(dtype).eval()
        self.model.requires_grad_(False)
        config = self.model.config
        self.shape = ModelShape(
            num_layers=config.num_hidden_layers,
            num_heads=config.num_attention_heads,
            num_kv_heads=config.num_key_value_heads,
            head_dim=getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
            hidden_size=config.hidden_size,
            vocab_size=config.vocab_size,
        )
        self.dtype = dtype
        inner = self.model.model
        self.embed, self.layers, self.norm, self.rotary = inner.embed_tokens, inner.layers, inner.norm, inner.rotary_emb
        self.qk_norm = hasattr(self.layers[0].self_attn, "q_norm")
        self.names = [
            {p: f"model.layers.{i}.{'self_attn' if p in ATTENTION else 'mlp'}.{p}" for p in ATTENTION + MLP}
            for i in range(self.shape.num_layers)
        ]

    def new_cache(self, num_slots: int, max_len: int) -> SlotKVCache:
        s = self.shape
        return SlotKVCache(s.num_layers, num_slots, s.num_kv_heads, max_len, s.head_dim, self.dtype)

    @torch.inference_mode()
    def forward(
        self,
        tokens_BT: torch.Tensor,
        starts_B: list[int],
        slot0: int,
        cache: SlotKVCache,
        adapters_B: list[ServingAdapter | None],
        all_logits: bool = False,
    ) -> torch.Tensor:
        """Logits (float32) for the last token of each row, or for every token with ``all_logits``:
        (B, 1 or T, vocab). Rows live in cache slots slot0..slot0+B-1; row b's new tokens sit at
        positions starts_B[b]...; their K/V are written to the cache."""
        B, T = tokens_BT.shape
        s = self.shape
        positions_BT = torch.tensor(starts_B)[:, None] + torch.arange(T)
        length = max(starts_B) + T
        mask_B1TL = (torch.arange(length) <= positions_BT[:, :, None])[:, None]
        groups = group_rows(adapters_B, T)
        x = self.embed(tokens_BT)  # (B, T, hidden)
        cos, sin = self.rotary(x, positions_BT)  # (B, T, D)
        for i, layer in enumerate(self.layers):
            names, attn, mlp = self.names[i], layer.self_attn, layer.mlp
            h = layer.input_layernorm(x).view(B * T, -1)
            q = lora_linear(h, attn.q_proj, names["q_proj"], groups).view(B, T, s.num_heads, s.head_dim)
            k = lora_linear(h, attn.k_proj, names["k_proj"], groups).view(B, T, s.num_kv_heads, s.head_dim)
            v = lora_linear(h, attn.v_proj, names["v_proj"], groups).view(B, T, s.num_kv_heads, s.head_dim)
            if self.qk_norm:
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # (B, H, T, D)
            q, k = apply_rotary_pos_emb(q, k, cos, sin)
            cache.write(i, slot0, starts_B, k, v)
            keys, values = cache.view(i, slot0, B, length)  # (B, Hkv, L, D)
            o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask_B1TL, enable_gqa=True)
            o = o.transpose(1, 2).reshape(B * T, s.num_heads * s.head_dim)
            x = x + lora_linear(o, attn.o_proj, names["o_proj"], groups).view(B, T, -1)
            h = layer.post_attention_layernorm(x).view(B * T, -1)
            gate = lora_linear(h, mlp.gate_proj, names["gate_proj"], groups)
            up = lora_linear(h, mlp.up_proj, names["up_proj"], groups)
            x = x + lora_linear(F.silu(gate) * up, mlp.down_proj, names["down_proj"], groups).view(B, T, -1)
        x = self.norm(x if all_logits else x[:, -1:])
        rows = x.shape[1]
        logits = lora_linear(x.reshape(B * rows, -1), self.model.lm_head, "lm_head", group_rows(adapters_B, rows))
        return logits.view(B, rows, -1).float()
