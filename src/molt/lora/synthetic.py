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


def scripted_adapter_weights(
    model: torch.nn.Module, prompt: list[int], answer: list[int], margin: float = 100.0
) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """A LoRA on ``lm_head`` that makes greedy decoding after ``prompt`` produce exactly ``answer``.

    Built in closed form, not trained: with H the base's final hidden states at the positions
    that predict each answer token (n × hidden), lora_A = pinv(H)^T gives H·A^T = I, and lora_B
    puts ``margin`` on the wanted token of each position. Needs len(answer) <= hidden size.
    Use with ``lora_alpha = r`` (scaling 1). Tests use it to script a model's reply exactly.
    """
    with torch.no_grad():
        states = model.model(torch.tensor([prompt + answer[:-1]])).last_hidden_state[0].float()
    H = states[len(prompt) - 1 :]  # (n, hidden): the states that predict answer[0..n-1]
    if H.shape[0] > H.shape[1]:
        raise ValueError(f"a scripted answer can have at most {H.shape[1]} tokens, got {H.shape[0]}")
    A = torch.linalg.pinv(H).T.contiguous()  # (n, hidden)
    B = torch.zeros(model.lm_head.out_features, len(answer))  # (vocab, n)
    B[torch.tensor(answer), torch.arange(len(answer))] = margin
    return {"lm_head": (A, B)}


def write_scripted_adapter(path: Path, model: torch.nn.Module, base_name: str, prompt: list[int], answer: list[int]) -> Path:
    weights = scripted_adapter_weights(model, prompt, answer)
    r = len(answer)
    return write_adapter(path, weights, r=r, lora_alpha=r, base_model=base_name)
