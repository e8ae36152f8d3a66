"""The built-in losses of Tinker's ``forward_backward``, per token and summed (never averaged).

Each takes the learner's logprobs of the target tokens (T,), the datum's inputs, and the loss
config, and returns a scalar to minimise. Normalisation, if any, belongs in the advantages or
weights; there is no KL term (add it to the reward). ``q`` below is the sampler's logprob.

    cross_entropy        -Σ w · log p
    importance_sampling  -Σ (p/q) · A
    ppo                  -Σ min((p/q) · A, clip(p/q, low, high) · A)
    cispo                -Σ sg(clip(p/q, low, high)) · log p · A
    dro                  -Σ (log p · A − ½ β (log p − log q)²)
"""

from collections.abc import Callable

import torch

Loss = Callable[[torch.Tensor, dict[str, torch.Tensor], dict[str, float]], torch.Tensor]


class LossInputError(ValueError):
    """A loss was asked for with missing inputs, mismatched shapes or an unknown config key."""


def cross_entropy(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    return -(logprobs * inputs["weights"]).sum()


def _ratio(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.exp(logprobs - inputs["logprobs"])


def importance_sampling(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    return -(_ratio(logprobs, inputs) * inputs["advantages"]).sum()


def ppo(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    ratio, advantages = _ratio(logprobs, inputs), inputs["advantages"]
    clipped = ratio.clamp(config["clip_low_threshold"], config["clip_high_threshold"])
    return -torch.minimum(ratio * advantages, clipped * advantages).sum()


def cispo(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    clipped = _ratio(logprobs, inputs).clamp(config["clip_low_threshold"], config["clip_high_threshold"])
    return -(clipped.detach() * logprobs * inputs["advantages"]).sum()


def dro(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    penalty = 0.5 * config["beta"] * (logprobs - inputs["logprobs"]) ** 2
    return -(logprobs * inputs["advantages"] - penalty).sum()


CLIP = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
RL_INPUTS = ("target_tokens", "logprobs", "advantages")
LOSSES: dict[str, tuple[Loss, tuple[str, ...], dict[str, float]]] = {
    "cross_entropy": (cross_entropy, ("target_tokens", "weights"), {}),
    "importance_sampling": (importance_sampling, RL_INPUTS, {}),
    "ppo": (ppo, RL_INPUTS, CLIP),
    "cispo": (cispo, RL_INPUTS, CLIP),
    "dro": (dro, RL_INPUTS, {"beta": 0.05}),
}
"""name → (function, required loss_fn_inputs, default loss_fn_config)."""


def resolve_loss(name: str, config: dict[str, float] | None) -> tuple[Loss, tuple[str, ...], dict[str, float]]:
    """The loss function, its required inputs, and its config with defaults filled in."""
    if name not in LOSSES:
        raise LossInputError(f"unknown loss_fn {name!r}; built-in losses: {', '.join(LOSSES)}")
    fn, required, defaults = LOSSES[name]
    unknown = set(config or {}) - set(defaults)
    if unknown:
        allowed = ", ".join(defaults) or "none"
        raise LossInputError(f"loss_fn {name!r} has no config {', '.join(sorted(unknown))}; it takes: {allowed}")
    return fn, required, {**defaults, **(config or {})}


def check_inputs(name: str, required: tuple[str, ...], inputs: dict[str, torch.Tensor], length: int) -> None:
    """Every required input present, one value per position of the model input."""
    for key in required:
        if key not in inputs:
            raise LossInputError(f"loss_fn {name!r} needs loss_fn_inputs[{key!r}]")
        if tuple(inputs[key].shape) != (length,):
            raise LossInputError(
                f"loss_fn_inputs[{key!r}] has shape {tuple(inputs[key].shape)}; expected ({length},), one per model_input position"
            )
