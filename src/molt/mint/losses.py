"""The built-in losses of Tinker's ``forward_backward``, per token and summed (never averaged).

Each takes the learner's logprobs of the target tokens (T,), the datum's inputs, and the loss
config, and returns a scalar to minimise. Normalisation, if any, belongs in the advantages or
weights; there is no KL term (add it to the reward). ``q`` below is the sampler's logprob.

    cross_entropy        -Σ w · log p
    importance_sampling  -Σ (p/q) · A
    ppo                  -Σ min((p/q) · A, clip(p/q, low, high) · A)
    cispo                -Σ sg(clip(p/q, low, high)) · log p · A
    dro                  -Σ (log p · A − ½ β (log p − log q)²)

Training–inference mismatch: the sampler (the engine) and the learner compute slightly different
probabilities for the same tokens, so even on-policy data is a little off-policy. Two options,
both on the ratio r = p/q taken as a constant (no gradient flows through the correction):

    tis_cap      (importance_sampling) truncated importance sampling: the gradient's weight r
                 becomes min(r, cap), i.e. -Σ sg(min(r, cap)) · log p · A; 0 = off
    icepop_beta  (every RL loss) IcePop masking: tokens with r outside [1/β, β] get no loss at
                 all; 0 = off

Routing replay (sparse-MoE bases, ``molt.mint.routing``) adds ``replayable`` to the inputs: 0 at
positions whose recorded routing could not be replayed; every loss gives those tokens no weight.

``mismatch_metrics`` reports the share of tokens each option touched, over the tokens that carry
an advantage (prompt positions, whose advantage and sampler logprob are 0, are not counted).
"""

from collections.abc import Callable

import torch

Loss = Callable[[torch.Tensor, dict[str, torch.Tensor], dict[str, float]], torch.Tensor]


class LossInputError(ValueError):
    """A loss was asked for with missing inputs, mismatched shapes or an unknown config key."""


def _replayed(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return inputs.get("replayable", torch.ones_like(logprobs))


def cross_entropy(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    return -(logprobs * inputs["weights"] * _replayed(logprobs, inputs)).sum()


def _ratio(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.exp(logprobs - inputs["logprobs"])


def _in_band(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    """IcePop: 1 where the sampler/learner ratio lies in [1/β, β] (or the option is off), else 0."""
    beta = config.get("icepop_beta", 0.0)
    if not beta:
        return torch.ones_like(logprobs)
    ratio = _ratio(logprobs.detach(), inputs)
    return ((ratio >= 1 / beta) & (ratio <= beta)).to(logprobs.dtype)


def _trusted(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    """The tokens an RL loss weighs: inside IcePop's band and replayable."""
    return _in_band(logprobs, inputs, config) * _replayed(logprobs, inputs)


def importance_sampling(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    ratio, keep = _ratio(logprobs, inputs), _trusted(logprobs, inputs, config)
    if config["tis_cap"]:
        return -(ratio.detach().clamp(max=config["tis_cap"]) * logprobs * inputs["advantages"] * keep).sum()
    return -(ratio * inputs["advantages"] * keep).sum()


def ppo(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    ratio, advantages = _ratio(logprobs, inputs), inputs["advantages"]
    clipped = ratio.clamp(config["clip_low_threshold"], config["clip_high_threshold"])
    return -(torch.minimum(ratio * advantages, clipped * advantages) * _trusted(logprobs, inputs, config)).sum()


def cispo(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    clipped = _ratio(logprobs, inputs).clamp(config["clip_low_threshold"], config["clip_high_threshold"])
    return -(clipped.detach() * logprobs * inputs["advantages"] * _trusted(logprobs, inputs, config)).sum()


def dro(logprobs: torch.Tensor, inputs: dict[str, torch.Tensor], config: dict[str, float]) -> torch.Tensor:
    penalty = 0.5 * config["beta"] * (logprobs - inputs["logprobs"]) ** 2
    return -((logprobs * inputs["advantages"] - penalty) * _trusted(logprobs, inputs, config)).sum()


def loss_start(inputs: dict[str, torch.Tensor], config: dict[str, float]) -> int:
    """The first position whose logprob enters the loss (its length if none does): a nonzero weight
    or advantage; under dro's penalty (β > 0) every position does."""
    if config.get("beta"):
        return 0
    acting = (inputs["weights"] if "weights" in inputs else inputs["advantages"]).nonzero()
    return int(acting[0, 0]) if len(acting) else len(inputs["target_tokens"])


def mismatch_metrics(logprobs: list[torch.Tensor], inputs: list[dict[str, torch.Tensor]], config: dict[str, float]) -> dict[str, float]:
    """Shares of the tokens with an advantage (or weight) that IcePop masked, TIS truncated and
    routing replay could not replay (when on)."""
    metrics: dict[str, float] = {}
    replayed = all("replayable" in d for d in inputs)
    if not (replayed or config.get("icepop_beta") or config.get("tis_cap")):
        return metrics
    acting = [d["advantages"] != 0 if "advantages" in d else d["weights"] != 0 for d in inputs]
    count = max(1, sum(int(a.sum()) for a in acting))
    if replayed:
        metrics["routing_unreplayed:mean"] = sum(int(((d["replayable"] == 0) & a).sum()) for d, a in zip(inputs, acting)) / count
    ratios = [_ratio(lp.detach(), d) for lp, d in zip(logprobs, inputs)]
    if config.get("icepop_beta"):
        masked = sum(int(((_in_band(lp, d, config) == 0) & a).sum()) for lp, d, a in zip(logprobs, inputs, acting))
        metrics["icepop_masked:mean"] = masked / count
    if config.get("tis_cap"):
        metrics["tis_truncated:mean"] = sum(int(((r > config["tis_cap"]) & a).sum()) for r, a in zip(ratios, acting)) / count
    return metrics


CLIP = {"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}
ICEPOP = {"icepop_beta": 0.0}
RL_INPUTS = ("target_tokens", "logprobs", "advantages")
LOSSES: dict[str, tuple[Loss, tuple[str, ...], dict[str, float]]] = {
    "cross_entropy": (cross_entropy, ("target_tokens", "weights"), {}),
    "importance_sampling": (importance_sampling, RL_INPUTS, {"tis_cap": 0.0} | ICEPOP),
    "ppo": (ppo, RL_INPUTS, CLIP | ICEPOP),
    "cispo": (cispo, RL_INPUTS, CLIP | ICEPOP),
    "dro": (dro, RL_INPUTS, {"beta": 0.05} | ICEPOP),
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
