"""Routing replay (R3): the training forward routes each token the way the sampler did, for
sparse-MoE bases (which experts) and sparse-attention bases (which positions each query attends).

The engine and the learner compute slightly different router and indexer scores (another kernel,
batch or dtype), so near-ties can flip: the learner then scores a token through other experts, or
over other positions, than the ones that produced it, and the policy ratio drifts although the
weights are the same. R3 records the choices at sampling time and replays them in training.

A Datum carries them as ``loss_fn_inputs``, one row per ``model_input`` position (vLLM's shape
for ``routed_experts``):

    routed_experts            (positions, MoE layers, top_k) expert ids; -1 where unknown
    routed_expert_weights     (same shape) the sampler's gate weights (optional)
    sparse_attention_indices  (positions, sparse layers, top_k) attended positions; -1: none

MoE replay swaps each router's choice for the recorded one. The gate weights take the recorded
values while their gradient is the learner's own (``recorded + current − sg(current)``), so the
forward equals the sampler's and the backward still reaches whatever feeds the router. Without
recorded weights, the learner's router scores the recorded experts (renormalised as the router
does). Sparse-attention replay gives each query the recorded positions instead of its indexer's
top-k (``molt.mint.packed``). A position whose routing cannot be replayed (missing, an expert this
base lacks, a position in the future or too few of them) keeps the learner's own choice, and the
token it predicts is masked from the loss (``replayable``).
"""

import contextlib
from collections.abc import Iterator

import torch

from molt.mint.losses import LossInputError
from molt.models.sparse_attention import SparseIndexer, attended_mask

EXPERTS, WEIGHTS, SPARSE = "routed_experts", "routed_expert_weights", "sparse_attention_indices"
ROUTING_INPUTS = (EXPERTS, WEIGHTS, SPARSE)
INTEGER_INPUTS = (EXPERTS, SPARSE)


def check_routing(inputs: dict[str, torch.Tensor], length: int, routers: list[torch.nn.Module], indexers: list[SparseIndexer]) -> None:
    """A datum's routing inputs, if any, match its length and the base's routed layers and top_k."""
    if WEIGHTS in inputs and EXPERTS not in inputs:
        raise LossInputError(f"loss_fn_inputs[{WEIGHTS!r}] needs loss_fn_inputs[{EXPERTS!r}]")
    kinds = {EXPERTS: (routers, "MoE"), WEIGHTS: (routers, "MoE"), SPARSE: (indexers, "sparse-attention")}
    for key, (layers, kind) in kinds.items():
        if key not in inputs:
            continue
        if not layers:
            raise LossInputError(f"loss_fn_inputs[{key!r}] given, but this base has no {kind} layers to replay")
        expected = (length, len(layers), layers[0].top_k)
        if tuple(inputs[key].shape) != expected:
            raise LossInputError(f"loss_fn_inputs[{key!r}] has shape {tuple(inputs[key].shape)}; expected {expected} (positions, {kind} layers, top_k)")


def experts_replayable(experts: torch.Tensor, num_experts: int) -> torch.Tensor:
    """(positions,) True where every layer's recorded experts exist in this base."""
    return ((experts >= 0) & (experts < num_experts)).flatten(1).all(1)


def positions_replayable(positions: torch.Tensor) -> torch.Tensor:
    """(positions,) True where every sparse layer's recorded row is one a causal top-k can give:
    min(top_k, t + 1) distinct positions no later than the query, -1 only as filler."""
    n, _, top_k = positions.shape
    t = torch.arange(n)[:, None, None]
    in_past = (positions == -1) | ((positions >= 0) & (positions <= t))
    distinct = attended_mask(positions.clamp(max=n - 1), n).sum(-1)  # (n, layers); out-of-range rows fail in_past anyway
    full = distinct == (t[:, :, 0] + 1).clamp(max=top_k)
    return in_past.flatten(1).all(1) & full.all(1)


def prepare(inputs: list[dict[str, torch.Tensor]], routers: list[torch.nn.Module], indexers: list[SparseIndexer]) -> tuple[contextlib.AbstractContextManager, dict]:
    """For a batch whose datums carry routing (each kind: all or none), mark every datum's
    ``replayable`` positions; return the MoE replay context and the attention's forward kwargs."""
    context, kwargs = contextlib.nullcontext(), {}
    for key in ROUTING_INPUTS:
        carried = [key in d for d in inputs]
        if any(carried) and not all(carried):
            raise LossInputError(f"either every datum of a request carries loss_fn_inputs[{key!r}] or none does")
    if EXPERTS in inputs[0]:
        for d in inputs:
            d["replayable"] = experts_replayable(d[EXPERTS], routers[0].num_experts)
        weights = torch.cat([d[WEIGHTS] for d in inputs]) if WEIGHTS in inputs[0] else None
        context = replay(routers, torch.cat([d[EXPERTS] for d in inputs]), weights)
    if SPARSE in inputs[0]:
        rows = [positions_replayable(d[SPARSE]) for d in inputs]
        kwargs = {"molt_sparse_positions": torch.cat([d[SPARSE] for d in inputs]).long(), "molt_sparse_replayable": torch.cat(rows)}
        for d, ok in zip(inputs, rows):
            d["replayable"] = d.get("replayable", torch.ones_like(ok)) & ok
    for d in inputs:
        if "replayable" in d:
            d["replayable"] = d["replayable"].float()
    return context, kwargs


@contextlib.contextmanager
def replay(routers: list[torch.nn.Module], experts: torch.Tensor, weights: torch.Tensor | None) -> Iterator[None]:
    """Within the block, every router returns the recorded routing for the rows it can replay.
    ``experts`` / ``weights``: (tokens, MoE layers, top_k) over the forward's flattened tokens."""
    num_experts = routers[0].num_experts
    keep = experts_replayable(experts, num_experts)[:, None]
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
