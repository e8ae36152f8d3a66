"""A PEFT LoRA adapter written as a GGUF LoRA, the form llama.cpp loads with ``--lora``.

llama.cpp names tensors by its own scheme (``blk.0.attn_q``), stores the LoRA pair as
``<tensor>.lora_a`` (r × in) and ``<tensor>.lora_b`` (out × r), and keeps the rows of the query
and key projections of LLaMA-style models in an interleaved rotary order: its converter permutes
those weights, and ``transformers`` undoes it when it loads a GGUF base. lora_B produces those
rows, so it gets the same permutation; lora_A (which reads the input) does not.
"""

from pathlib import Path

import gguf
import numpy as np
import torch

from molt.lora.format import LoraAdapter

_GGUF_TYPES = {torch.float32: gguf.GGMLQuantizationType.F32, torch.bfloat16: gguf.GGMLQuantizationType.BF16, torch.float16: gguf.GGMLQuantizationType.F16}


def rotary_permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's order of a query/key projection's rows: per head, the two rotary halves interleaved."""
    return weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)


def write_gguf_lora(adapter: LoraAdapter, path: Path, config, dtype: torch.dtype = torch.float32) -> Path:
    """Write ``adapter`` for a base with ``config`` (a transformers LLaMA-style config) to ``path``.

    ``alpha`` is written as ``scaling × r``, so llama.cpp's ``alpha / r`` equals molt's scaling
    (rsLoRA included).
    """
    if config.model_type not in ("llama", "mistral"):
        raise ValueError(f"GGUF LoRA export knows LLaMA-style models, not {config.model_type!r}")
    if dtype not in _GGUF_TYPES:
        raise ValueError(f"GGUF LoRA export writes float32, bfloat16 or float16, not {dtype}")
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, config.num_hidden_layers)
    heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}
    writer = gguf.GGUFWriter(path, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, adapter.scaling * adapter.r)
    for module, (A, B) in adapter.weights.items():
        name = names.get_name(module)
        if name is None:
            raise ValueError(f"{adapter.name}: llama.cpp has no tensor for {module}")
        b = B.float().numpy()
        if (kind := name.rsplit(".", 1)[-1]) in heads:
            b = rotary_permute(b, heads[kind])
        for suffix, matrix in (("lora_a", A.float().numpy()), ("lora_b", b)):
            data = gguf.quants.quantize(np.ascontiguousarray(matrix, dtype=np.float32), _GGUF_TYPES[dtype])
            # given as bytes: with raw_dtype set, gguf reads the array's shape as a byte shape
            writer.add_tensor(f"{name}.weight.{suffix}", data.view(np.uint8), raw_dtype=_GGUF_TYPES[dtype])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
