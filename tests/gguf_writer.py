"""Write a Hugging Face llama model as an F32 GGUF file, the way llama.cpp's converter lays it out.

Test helper only: it lets the GGUF loader be tested on a tiny model (seconds) instead of the real
embedded file (a 15 s dequantisation). The tokenizer fields are copied from another GGUF file.
"""

from pathlib import Path

import gguf
import numpy as np
import torch

LAYER_NAMES = {
    "input_layernorm": "attn_norm",
    "self_attn.q_proj": "attn_q",
    "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v",
    "self_attn.o_proj": "attn_output",
    "post_attention_layernorm": "ffn_norm",
    "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up",
    "mlp.down_proj": "ffn_down",
}


def _permute(weight: torch.Tensor, n_head: int) -> torch.Tensor:
    """llama.cpp stores q/k rows interleaved for its rope kernel; transformers undoes this on load."""
    rows = weight.shape[0]
    return weight.reshape(n_head, 2, rows // n_head // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def write_llama_gguf(model, tokenizer_gguf: Path, out: Path, architecture: str = "llama") -> Path:
    config = model.config
    writer = gguf.GGUFWriter(out, architecture)
    writer.add_context_length(config.max_position_embeddings)
    writer.add_embedding_length(config.hidden_size)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_rope_dimension_count(config.head_dim)
    writer.add_rope_freq_base(config.rope_parameters["rope_theta"])
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_vocab_size(config.vocab_size)
    reader = gguf.GGUFReader(tokenizer_gguf)
    for name, field in reader.fields.items():
        if name.startswith("tokenizer."):
            sub_type = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
            writer.add_key_value(name, field.contents(), field.types[0], sub_type)
    for name, tensor in model.state_dict().items():
        gguf_name = _gguf_name(name)
        if gguf_name is None:
            continue
        if name.endswith(("q_proj.weight", "k_proj.weight")):
            heads = config.num_attention_heads if "q_proj" in name else config.num_key_value_heads
            tensor = _permute(tensor, heads)
        writer.add_tensor(gguf_name, tensor.detach().float().numpy().astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


def _gguf_name(name: str) -> str | None:
    if name == "model.embed_tokens.weight":
        return "token_embd.weight"
    if name == "model.norm.weight":
        return "output_norm.weight"
    if name == "lm_head.weight":
        return None  # tied to the embedding
    _, _, index, rest = name.split(".", 3)
    module = rest.removesuffix(".weight")
    return f"blk.{index}.{LAYER_NAMES[module]}.weight"
