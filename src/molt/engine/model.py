"""The engine's forward pass: Llama / Qwen3 over a batch of cached sequences, with per-row LoRA.

Uses the weights (and norm/rotary modules) of the loaded transformers model, with its own loop:
no per-step cache objects or generation machinery, the KV cache written in place, and every
projection going through ``lora_linear`` so each row can carry its own adapter.

Key choices, all measured on 2 CPU cores:
- q/k/v and gate/up run as one matmul each; the fused weights are views that the transformers
  modules share, so nothing is stored twice.
- Resident adapters ride in the projections as slots (``adapter_slots``): rows keep their order
  and each projection is the base matmul plus one small expand matmul. Otherwise (an adapter not
  resident) rows are permuted once per step so each adapter's rows are contiguous for the
  projections; attention runs in slot order (two row gathers per layer).
- Decode attention treats the query heads that share a KV head as a short query sequence, so
  scaled_dot_product_attention runs on (B, Hkv, G, D) queries: several times faster on CPU than
  its ``enable_gqa`` path.

Sparse-MoE layers (``qwen3_moe``) run through the loaded block's own router and experts (no
LoRA on them); sparse-attention layers (``tiny:qwen3_dsa``) attend only where their indexer points.
A forward can record both choices for RL's routing replay (``routing``).

Shapes: B rows, T new tokens per row (B == 1 for a prefill chunk, T == 1 for a decode step),
Hq query heads, Hkv key/value heads, G = Hq / Hkv, D head dim, L attended length.
"""

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from molt.engine.adapter_slots import MAX_SLOTS, AdapterSlots
from molt.engine.kv_cache import SlotKVCache
from molt.engine.linear import linear, pack
from molt.lora.layers import Layout, LoraBatch, ServingAdapter, add_lora, plan_batch
from molt.models import LoadedModel
from molt.models.moe import is_moe, moe_routers
from molt.models.sparse_attention import attended_mask, sparse_indexers

FUSED = {"qkv": ("q_proj", "k_proj", "v_proj"), "o": ("o_proj",), "gate_up": ("gate_proj", "up_proj"), "down": ("down_proj",)}
MLP = ("gate_up", "down")


@dataclass
class Routing:
    """What one forward recorded of its routing, per layer in order, each (B, T, top_k) in slot
    order: the experts and gate weights of every MoE layer, the attended positions of every
    sparse-attention layer."""

    experts: list[torch.Tensor] = field(default_factory=list)
    gates: list[torch.Tensor] = field(default_factory=list)
    attended: list[torch.Tensor] = field(default_factory=list)


@dataclass(frozen=True)
class ModelShape:
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    vocab_size: int


class EngineModel:
    def __init__(self, loaded: LoadedModel, dtype: torch.dtype, packed: bool = True):
        self.model = loaded.model.to(dtype).eval()
        self.model.requires_grad_(False)
        config = self.model.config
        self.shape = ModelShape(
            num_layers=config.num_hidden_layers,
            num_heads=config.num_attention_heads,
            num_kv_heads=config.num_key_value_heads,
            head_dim=getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads,
            vocab_size=config.vocab_size,
        )
        self.dtype = dtype
        inner = self.model.model
        self.embed, self.layers, self.norm, self.rotary = inner.embed_tokens, inner.layers, inner.norm, inner.rotary_emb
        self.qk_norm = hasattr(self.layers[0].self_attn, "q_norm")
        self.routes = bool(moe_routers(self.model) or sparse_indexers(self.model))
        """Whether the base has routing a forward can record (MoE layers, sparse attention)."""
        self.layout = self._layout()
        self.weights = [self._fuse(i, layer, packed) for i, layer in enumerate(self.layers)]
        self.lm_head = pack(self.model.lm_head.weight.data, packed)
        self.packed = packed
        self.slots = AdapterSlots((), self.layout, packed)

    def reside(self, adapters: tuple[ServingAdapter, ...]) -> None:
        """Make ``adapters`` the slot adapters, re-packing each projection with their shrink rows
        (a no-op when they already are). Call between forwards, from the thread that runs them."""
        adapters = adapters if len(adapters) <= MAX_SLOTS else ()
        if adapters == self.slots.adapters:
            return
        self.slots = AdapterSlots(adapters, self.layout, self.packed)
        for weights in self.weights:
            for key, weight in weights.items():
                weights[key] = self.slots.extend(key, weight)
        self.lm_head = self.slots.extend("lm_head", self.lm_head)

    def _fuse(self, index: int, layer: torch.nn.Module, packed: bool) -> dict[str, torch.Tensor]:
        """Stack each fused group's weights into one packed tensor. The engine owns the loaded
        model: its projection modules keep their shapes (adapters are checked against them) but
        hand their weights over, so nothing is stored twice."""
        fused = {}
        for key, names in FUSED.items():
            if key in MLP and is_moe(layer):
                continue
            modules = [getattr(layer.self_attn if name in FUSED["qkv"] + FUSED["o"] else layer.mlp, name) for name in names]
            fused[f"model.layers.{index}.{key}"] = pack(torch.cat([m.weight.data for m in modules]), packed)
            for module in modules:
                module.weight = torch.nn.Parameter(torch.empty(0, dtype=self.dtype), requires_grad=False)
        return fused

    def _layout(self) -> Layout:
        """Which base modules each fused weight stacks, for preparing adapters."""
        layout: Layout = {}
        for i, layer in enumerate(self.layers):
            for key, names in FUSED.items():
                if key in MLP and is_moe(layer):
                    continue
                parts, row = [], 0
                for name in names:
                    prefix = "self_attn" if name in FUSED["qkv"] + FUSED["o"] else "mlp"
                    module = getattr(getattr(layer, prefix), name)
                    parts.append((f"model.layers.{i}.{prefix}.{name}", row, row + module.out_features))
                    row += module.out_features
                layout[f"model.layers.{i}.{key}"] = parts
        layout["lm_head"] = [("lm_head", 0, self.shape.vocab_size)]
        return layout

    def new_cache(self, num_slots: int, max_len: int, dtype: torch.dtype | None = None) -> SlotKVCache:
        s = self.shape
        return SlotKVCache(s.num_layers, num_slots, s.num_kv_heads, max_len, s.head_dim, dtype or self.dtype)

    @torch.inference_mode()
    def forward(
        self,
        tokens_BT: torch.Tensor,
        starts_B: list[int],
        slot0: int,
        cache: SlotKVCache,
        adapters_B: list[ServingAdapter | None],
        all_logits: bool = False,
        last_B: list[int] | None = None,
        routing: Routing | None = None,
    ) -> torch.Tensor:
        """Logits (float32) for the last token of each row, or for every token with ``all_logits``:
        (B, 1 or T, vocab). Rows live in cache slots slot0..slot0+B-1; row b's new tokens sit at
        positions starts_B[b]...; their K/V are written to the cache. Rows of a prefill may be
        right-padded: ``last_B`` gives each row's last real token (default: the last column);
        padded positions get K/V that no real token attends to and that later tokens overwrite.
        A ``routing`` receives the new tokens' experts and attended positions."""
        B, T = tokens_BT.shape
        s = self.shape
        q_size, kv_size = s.num_heads * s.head_dim, s.num_kv_heads * s.head_dim
        batch = plan_batch(adapters_B, T, self.slots)
        permutation = batch.permutation
        inverse = torch.argsort(permutation) if permutation is not None else None
        positions_BT = torch.tensor(starts_B)[:, None] + torch.arange(T)
        length = max(starts_B) + T
        mask = (torch.arange(length) <= positions_BT[:, :, None])[:, None]  # (B, 1, T, L)
        tokens = tokens_BT if permutation is None else tokens_BT[permutation]
        x = self.embed(tokens).view(B * T, -1)  # rows in segment order
        cos, sin = self.rotary(x, positions_BT)  # (B, T, D), slot order
        for i, layer in enumerate(self.layers):
            w, attn, prefix = self.weights[i], layer.self_attn, f"model.layers.{i}."
            h = layer.input_layernorm(x)
            qkv = self._project(h, w, prefix + "qkv", batch)
            qkv = qkv.view(B, T, -1) if inverse is None else qkv.view(B, T, -1)[inverse]
            q, k, v = qkv.split([q_size, kv_size, kv_size], dim=-1)
            q = q.reshape(B, T, s.num_heads, s.head_dim)
            k = k.reshape(B, T, s.num_kv_heads, s.head_dim)
            if self.qk_norm:
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)  # (B, H, T, D)
            v = v.reshape(B, T, s.num_kv_heads, s.head_dim).transpose(1, 2)
            cache.write(i, slot0, starts_B, k, v)
            keys, values = cache.view(i, slot0, B, length)
            o = self._attend(q, keys, values, self._sparse(attn, q, keys, mask, routing)).to(x.dtype)  # (B * T, Hq * D)
            if permutation is not None:
                o = o.view(B, T, -1)[permutation].view(B * T, -1)
            x = x + self._project(o, w, prefix + "o", batch)
            h = layer.post_attention_layernorm(x)
            if is_moe(layer):
                x = x + self._moe(layer.mlp, h, routing, inverse, (B, T))
                continue
            gate, up = self._project(h, w, prefix + "gate_up", batch).chunk(2, dim=-1)
            x = x + self._project(F.silu(gate) * up, w, prefix + "down", batch)
        x = x.view(B, T, -1)
        if not all_logits:
            last = torch.full((B,), T - 1) if last_B is None else torch.tensor(last_B)
            x = x[torch.arange(B), last if permutation is None else last[permutation]][:, None]
        x = self.norm(x)
        rows = x.shape[1]
        head = plan_batch(adapters_B, rows, self.slots) if rows != T else batch
        logits = self._project(x.reshape(B * rows, -1), {"lm_head": self.lm_head}, "lm_head", head).view(B, rows, -1)
        return (logits if inverse is None else logits[inverse]).float()

    @staticmethod
    def _moe(block: torch.nn.Module, h: torch.Tensor, routing: Routing | None, inverse: torch.Tensor | None, shape: tuple[int, int]) -> torch.Tensor:
        """The block's router picks each token's experts and gate weights; its experts run them."""
        _, weights, experts = block.gate(h)  # (B * T, top_k), rows in segment order
        if routing is not None:
            ids, gates = experts.view(*shape, -1), weights.view(*shape, -1)
            routing.experts.append(ids if inverse is None else ids[inverse])
            routing.gates.append(gates if inverse is None else gates[inverse])
        return block.experts(h, experts, weights)

    @staticmethod
    def _sparse(attn: torch.nn.Module, q: torch.Tensor, keys: torch.Tensor, mask: torch.Tensor, routing: Routing | None) -> torch.Tensor:
        """A sparse-attention layer's mask: the causal one narrowed to its indexer's top-k positions."""
        indexer = getattr(attn, "indexer", None)
        if indexer is None:
            return mask
        attended = indexer.select(q, keys, mask[:, 0])  # (B, T, top_k)
        if routing is not None:
            routing.attended.append(attended)
        return mask & attended_mask(attended, keys.shape[2])[:, None]

    def _project(self, x: torch.Tensor, weights: dict[str, torch.Tensor], key: str, batch: LoraBatch) -> torch.Tensor:
        z = linear(x, weights[key])
        rows = self.slots.rows(key)
        if z.shape[-1] == rows:
            return add_lora(z, x, key, batch)
        return add_lora(z[:, :rows], x, key, batch, shrunk=z[:, rows:])

    def _attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """q (B, Hq, T, D) over keys/values (B, Hkv, L, D) → (B * T, Hq * D)."""
        B, Hq, T, D = q.shape
        Hkv = keys.shape[1]
        q = q.to(keys.dtype)
        if T == 1:  # decode: the G query heads of a KV head become a length-G query
            o = F.scaled_dot_product_attention(q.view(B, Hkv, Hq // Hkv, D), keys, values, attn_mask=mask)
            return o.reshape(B, Hq * D)
        o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)
        return o.transpose(1, 2).reshape(B * T, Hq * D)
