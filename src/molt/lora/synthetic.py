"""Random LoRA adapters of a given shape, for tests and benchmarks (no training involved).

Unlike PEFT's initialisation (lora_B = 0, a no-op), both matrices are random, so an adapter
visibly changes the model's output and a mix-up between adapters cannot go unnoticed.
"""

from pathlib import Path

import torch

from molt.lora.format import write_adapter

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def random_adapter_weights(
    base: torch.nn.Module, r: int = 8, targets: tuple[str, ...] = ATTENTION + MLP, seed: int = 0, std: float = 0.05
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, module in base.named_modules():
        if isinstance(module, torch.nn.Linear) and name.rsplit(".", 1)[-1] in targets:
            A = torch.randn(r, module.in_features, generator=generator) * std
            B = torch.randn(module.out_features, r, generator=generator) * std
            weights[name] = (A, B)
    return weights


def write_random_adapter(path: Path, base: torch.nn.Module, base_name: str, r: int = 8, lora_alpha: float = 16, **kwargs) -> Path:
    return write_adapter(path, random_adapter_weights(base, r, **kwargs), r=r, lora_alpha=lora_alpha, base_model=base_name)
