"""Sparse-MoE layers of a loaded base (``qwen3_moe``): which layers route tokens to experts, and
their routers. The engine serves them and records their choices; MinT replays those choices."""

import torch


def is_moe(layer: torch.nn.Module) -> bool:
    """Whether a decoder layer's MLP is a sparse-MoE block (a router and experts)."""
    return hasattr(layer.mlp, "experts")


def moe_routers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The router of each sparse-MoE layer of a causal LM, in layer order."""
    return [layer.mlp.gate for layer in model.get_decoder().layers if is_moe(layer)]
