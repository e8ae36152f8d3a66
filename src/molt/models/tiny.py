"""Tiny random base models for tests: the real architecture and tokenizer, a few layers of width 64.

Seeded and deterministic (same seed → bit-identical weights) without touching the caller's
global RNG state. Built in a fraction of a second once the embedded tokenizer is cached.
"""

import torch
from molt.models.sparse_attention import attach_indexers
from transformers import AutoModelForCausalLM, LlamaConfig, PretrainedConfig, PreTrainedTokenizerBase, Qwen3Config, Qwen3MoeConfig

TINY_SHAPE = dict(
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=4096,
    tie_word_embeddings=True,
)
CONFIGS: dict[str, type[PretrainedConfig]] = {"llama": LlamaConfig, "qwen3": Qwen3Config, "qwen3_moe": Qwen3MoeConfig}
MOE_SHAPE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=64, norm_topk_prob=True)
"""Sparse MoE: every layer routes each token to 2 of 4 experts (the R3 routing-replay tests)."""


SPARSE_VARIANTS = {"qwen3_dsa": "qwen3"}
"""Tiny-only variants: the architecture plus a DSA-style indexer on every attention layer
(``molt.models.sparse_attention``; the routing-replay tests)."""


def tiny_config(model_type: str, tokenizer: PreTrainedTokenizerBase) -> PretrainedConfig:
    return CONFIGS[model_type](
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **TINY_SHAPE,
        **(MOE_SHAPE if model_type == "qwen3_moe" else {}),
    )


def build_tiny_model(model_type: str, tokenizer: PreTrainedTokenizerBase, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised model of ``model_type`` sized for ``tokenizer``, in float32."""
    config = tiny_config(SPARSE_VARIANTS.get(model_type, model_type), tokenizer)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        if model_type in SPARSE_VARIANTS:
            attach_indexers(model)
    return model.eval()
