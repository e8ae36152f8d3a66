"""Adapter slots: every resident adapter's shrink rides in the base projection's packed weight.

The resident adapters' A matrices are appended to each fused base weight as extra output rows, so
one packed matmul yields both the base output and every slot's shrunk activations (x A^T for all
adapters at once). Each row keeps only its own adapter's columns (a 0/1 mask) and one packed
matmul with the slots' stacked scaling·B expands them:

    z = x [W; A_1; …; A_S]^T        y = z[:, :out] + (z[:, out:] ⊙ mask) [B_1 … B_S]^T

Per projection that is the base matmul plus one small matmul, whatever the mix of adapters, and
rows need no reordering (vLLM's fixed ``max_loras`` slots, with Punica's shrink folded into the
base GEMM). Measured at decode batch 16, four rank-16 adapters, bf16 on 2 cores: the LoRA part of
a layer's four projections costs ~150 µs against ~240 µs for the grouped bmm path.

A batch uses the slots only when every adapter in it is resident (a request still finishing on an
older revision of a reloaded adapter is not); otherwise it takes the grouped path in ``layers``.
The extended weights replace the plain ones, so base-only rows pay for the extra columns too; with
S slots of rank r that is S·r more outputs on each projection (a few percent at S·r ≤ 256).
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from molt.engine.linear import linear, pack
from molt.lora.layers import Layout, ServingAdapter

if TYPE_CHECKING:
    from molt.lora.layers import LoraBatch

MAX_SLOTS = 8
"""Resident adapters beyond this many make every batch take the grouped path (the extended weights
would grow past a few percent of the base)."""


@dataclass(frozen=True)
class SlotWeight:
    """One fused weight's slot columns: the expand matrix and which slot owns each column."""

    expand: torch.Tensor
    """(out, C) the slots' scaling·B side by side, packed like the base weights."""
    column_slot: torch.Tensor
    """(C,) the slot of each shrunk column."""


class AdapterSlots:
    def __init__(self, adapters: tuple[ServingAdapter, ...], layout: Layout, packed: bool):
        self.adapters = adapters
        self.layout, self.packed = layout, packed
        self._slot = {id(a): s for s, a in enumerate(adapters)}
        self.shrink: dict[str, torch.Tensor] = {}
        """Fused weight name → (C, in) every slot's A stacked: the rows appended to the base weight."""
        self.weights: dict[str, SlotWeight] = {}
        owners: dict[tuple, torch.Tensor] = {}  # one column→slot map per distinct rank pattern, so a batch builds few masks
        for key in layout:
            present = [(s, a.weights[key]) for s, a in enumerate(adapters) if key in a.weights]
            if present:
                self.shrink[key] = torch.cat([A for _, (A, _) in present])
                expand = torch.cat([B for _, (_, B) in present], dim=1)
                pattern = tuple((s, A.shape[0]) for s, (A, _) in present)
                if pattern not in owners:
                    owners[pattern] = torch.cat([torch.full((rank,), s) for s, rank in pattern])
                self.weights[key] = SlotWeight(pack(expand.contiguous(), packed), owners[pattern])

    def slot(self, adapter: ServingAdapter) -> int | None:
        return self._slot.get(id(adapter))

    def rows(self, key: str) -> int:
        """The base projection's output features (the extended weight's first rows)."""
        return self.layout[key][-1][2]

    def extend(self, key: str, weight: torch.Tensor) -> torch.Tensor:
        """``weight`` (plain or packed, possibly extended for earlier slots) with exactly these
        slots' shrink rows appended after its base rows."""
        base = (weight.to_dense() if weight.is_mkldnn else weight)[: self.rows(key)]
        if key in self.shrink:
            base = torch.cat([base, self.shrink[key].to(base.dtype)])
        return pack(base.contiguous(), self.packed)

    def add(self, y: torch.Tensor, shrunk: torch.Tensor, key: str, batch: "LoraBatch") -> None:
        """Add each row's delta to ``y`` in place from ``shrunk`` (N, C), the extended matmul's slot
        columns; the batch gives each row's slot and keeps the row masks it has built."""
        weight = self.weights.get(key)
        if weight is None:
            return
        cache_key = id(weight.column_slot)
        if cache_key not in batch.masks:
            batch.masks[cache_key] = (batch.row_slot[:, None] == weight.column_slot[None]).to(shrunk.dtype)
        y.add_(linear(shrunk * batch.masks[cache_key], weight.expand))
