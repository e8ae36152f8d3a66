"""R3, rollout routing replay: a sparse-MoE base's training forward routes each token to the
experts the sampler chose for it.

The engine and the learner compute slightly different router logits (another kernel, batch or
dtype), so near-ties between experts can flip: the learner then scores a token with other experts
than the ones that produced it, and the policy ratio drifts although the weights are the same.
R3 records the routing at sampling time and replays it in training.

A Datum carries the routing as two ``loss_fn_inputs``, one row per ``model_input`` position, the
shape of vLLM's ``routed_experts``:

    routed_experts          (positions, MoE layers, top_k) expert ids; -1 where unknown
    routed_expert_weights   (same shape) the sampler's gate weights (optional)

Replay swaps each MoE router's choice for the recorded one. The gate weights take the recorded
values while their gradient is the learner's own (``recorded + current − sg(current)``), so the
forward equals the sampler's and the backward still reaches whatever feeds the router. Without
recorded weights, the learner's router scores the recorded experts (renormalised as the router
does). A position whose routing cannot be replayed (missing, or an expert this base lacks) keeps
the learner's own routing, and the token it predicts is masked from the loss (``replayable``).
"""

import contextlib
from collections.abc import Iterator

import torch

from molt.mint.losses import LossInputError

EXPERTS, WEIGHTS = "routed_experts", "routed_expert_weights"
ROUTING_INPUTS = (EXPERTS, WEIGHTS)


def moe_routers(model: torch.nn.Module) -> list[torch.nn.Module]:
    """The router of each sparse-MoE layer of a causal LM, in layer order."""
    return [layer.mlp.gate for layer in model.get_decoder().layers if hasattr(layer.mlp, "experts")]


def check_routing(inputs: dict[str, torch.Tensor], length: int, routers: list[torch.nn.Module]) -> None:
    """A datum's routing inputs, if any, match its length and the base's MoE layers and top_k."""
    if EXPERTS not in inputs:
        if WEIGHTS in inputs:
            raise LossInputError(f"loss_fn_inputs[{WEIGHTS!r}] needs loss_fn_inputs[{EXPERTS!r}]")
        return
    if not routers:
        raise LossInputError(f"loss_fn_inputs[{EXPERTS!r}] given, but this base has no MoE layers to replay")
    expected = (length, len(routers), routers[0].top_k)
    for key in ROUTING_INPUTS:
        if key in inputs and tuple(inputs[key].shape) != expected:
            raise LossInputError(
                f"loss_fn_inputs[{key!r}] has shape {tuple(inputs[key].shape)}; expected {expected} "
                "(positions, MoE layers, top_k)"
            )


def replayable(experts: torch.Tensor, num_experts: int) -> torch.Tensor:
    """(positions,) True where every layer's recorded experts exist in this base."""
    return ((experts >= 0) & (experts < num_experts)).flatten(1).all(1)


@contextlib.contextmanager
def replay(routers: list[torch.nn.Module], experts: torch.Tensor, weights: torch.Tensor | None) -> Iterator[None]:
    """Within the block, every router returns the recorded routing for the rows it can replay.
    ``experts`` / ``weights``: (tokens, MoE layers, top_k) over the forward's flattened tokens."""
    num_experts = routers[0].num_experts
    keep = replayable(experts, num_experts)[:, None]
    ids = experts.clamp(0, num_experts - 1).long()  # rows that are not kept take the router's own choice

    def hook(layer: int):
        def swap(router: torch.nn.Module, args, output):
            logits, scores, chosen = output
            layer_ids = ids[:, layer]
            current = logits.float().softmax(-1).gather(1, layer_ids)
            if router.norm_topk_prob:
                current = current / current.sum(-1, keepdim=True)
            gates = current if weights is None else weights[:, layer] + current - current.detach()
            return logits, torch.where(keep, gates.to(scores.dtype), scores), torch.where(keep, layer_ids, chosen)

        return swap

    handles = [router.register_forward_hook(hook(i)) for i, router in enumerate(routers)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
