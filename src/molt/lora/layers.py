"""Mixed-adapter LoRA on a batch: each row may use a different adapter, or none.

Semantics (``reference_lora_linear`` is this loop; ``add_lora`` must match it), for each row i
with adapter a(i):
    y[i] = x[i] W^T + scaling[a] * (x[i] A[a]^T) B[a]^T

The fast path computes the delta grouped by adapter: the engine orders rows so that each
adapter's rows form one contiguous segment. One adapter present: one matmul pair on its rows.
Several: one grouped GEMM (``bmm`` over the adapters, segments padded to the longest) with the
adapters' weights stacked once per set of adapters and cached — never a weight gather per token
(the S-LoRA/Punica SGMV idea, written for the CPU, where each small bf16 matmul call costs
~20 µs whatever its size, so fewer calls is what counts). Rows with no adapter skip the LoRA path.

Fused projections: the engine runs q/k/v and gate/up as single matmuls, so an adapter is
prepared against a *layout*: for each fused weight, which base modules it stacks and at which
output rows. The adapter's A matrices are stacked and its B matrices placed block-diagonally,
so one matmul pair serves every targeted module of a fused weight.
"""

from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

import torch

from molt.lora.format import LoraAdapter

if TYPE_CHECKING:
    from molt.engine.adapter_slots import AdapterSlots


Layout = dict[str, list[tuple[str, int, int]]]
"""Fused weight name → [(base module name, first output row, end output row)]."""


@dataclass(frozen=True, eq=False)
class ServingAdapter:
    """An adapter prepared for serving: serving dtype, scaling folded in, fused to the engine's layout."""

    name: str
    revision: int
    """Increases each time a name is (re)loaded; a running request keeps the revision it started with."""
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]]
    """Fused weight name → (A (r_total, in), scaling·B (out, r_total)), in the serving dtype, so the
    delta is added in place with no cast (on a CPU without native bf16 the engine serves float32)."""
    num_bytes: int
    path: str
    """Folder the adapter was read from."""

    @classmethod
    def prepare(cls, adapter: LoraAdapter, revision: int, dtype: torch.dtype, layout: Layout) -> "ServingAdapter":
        weights = {}
        for fused, parts in layout.items():
            present = [(name, start, end) for name, start, end in parts if name in adapter.weights]
            if not present:
                continue
            A = torch.cat([adapter.weights[name][0] for name, _, _ in present])  # (r_total, in)
            B = torch.zeros(parts[-1][2], A.shape[0])  # (out, r_total), block-diagonal
            column = 0
            for name, start, end in present:
                part = adapter.weights[name][1]
                B[start:end, column : column + part.shape[1]] = part * adapter.scaling
                column += part.shape[1]
            weights[fused] = (A.to(dtype).contiguous(), B.to(dtype).contiguous())
        return cls(adapter.name, revision, weights, adapter.num_bytes, str(adapter.path))


@dataclass(frozen=True)
class Segment:
    adapter: ServingAdapter | None
    start: int
    end: int


class StackedAdapters:
    """The weights of an ordered set of adapters stacked per fused weight, for one grouped GEMM:
    A (G, in, r_max) and B (G, r_max, out), zero-padded to the largest rank; built lazily per
    weight and kept while the same set keeps appearing (``stack_adapters`` caches them)."""

    def __init__(self, adapters: tuple[ServingAdapter, ...]):
        self.adapters = adapters
        self._stacked: dict[str, tuple[torch.Tensor, torch.Tensor] | None] = {}

    def get(self, key: str) -> tuple[torch.Tensor, torch.Tensor] | None:
        if key not in self._stacked:
            pairs = [a.weights.get(key) for a in self.adapters]
            present = [p for p in pairs if p is not None]
            if not present:
                self._stacked[key] = None
            else:
                r_max = max(A.shape[0] for A, _ in present)
                (A0, B0), G = present[0], len(pairs)
                A = torch.zeros(G, A0.shape[1], r_max, dtype=A0.dtype)
                B = torch.zeros(G, r_max, B0.shape[0], dtype=B0.dtype)
                for g, pair in enumerate(pairs):
                    if pair is not None:
                        A[g, :, : pair[0].shape[0]] = pair[0].T
                        B[g, : pair[1].shape[1]] = pair[1].T
                self._stacked[key] = (A, B)
        return self._stacked[key]


@lru_cache(maxsize=8)
def stack_adapters(adapters: tuple[ServingAdapter, ...]) -> StackedAdapters:
    return StackedAdapters(adapters)


@dataclass(frozen=True)
class LoraBatch:
    """How one batch's rows meet their adapters: rows are permuted so each adapter's rows form a
    segment (adapters first, base-only rows last). One adapter segment runs as a plain matmul
    pair; several run as one grouped GEMM over segments padded to the longest."""

    permutation: torch.Tensor | None
    """Row order that makes segments contiguous; None when the rows already are."""
    segments: list[Segment]
    """In token rows of the permuted batch."""
    stacked: StackedAdapters | None = None
    """Set when two or more adapters are present."""
    lora_rows: int = 0
    """Rows that carry an adapter (they come first)."""
    pad_index: torch.Tensor | None = None
    """(G·S,) rows gathered into the padded (G, S) layout; None when every segment has S rows."""
    valid: torch.Tensor | None = None
    """Positions of real rows in the padded layout, in row order."""
    group_size: int = 0
    slots: "AdapterSlots | None" = None
    """Set when every adapter of the batch is resident in the engine's slots: then rows keep their
    order and ``row_slot`` says each token row's slot (-1: base only)."""
    row_slot: torch.Tensor | None = None
    masks: dict = field(default_factory=dict)
    """The slots' per-batch row masks, built on first use."""


def plan_batch(adapters_B: list[ServingAdapter | None], tokens_per_row: int = 1, slots: "AdapterSlots | None" = None) -> LoraBatch:
    """Rows are permuted as wholes; segments and padding are counted in tokens (row × T). With
    ``slots`` holding every adapter present, rows stay in place and each carries its slot."""
    if slots is not None and any(adapters_B):
        row_slot = [-1 if a is None else slots.slot(a) for a in adapters_B]
        if None not in row_slot:
            return LoraBatch(None, [], slots=slots, row_slot=torch.tensor(row_slot).repeat_interleave(tokens_per_row))
    groups: dict[int, list[int]] = {}
    for row, adapter in enumerate(adapters_B):
        groups.setdefault(id(adapter), []).append(row)
    ordered = sorted(groups.values(), key=lambda rows: _order_key(adapters_B[rows[0]]))
    rows = [row for group in ordered for row in group]
    segments, start = [], 0
    for group in ordered:
        segments.append(Segment(adapters_B[group[0]], start, start + len(group) * tokens_per_row))
        start += len(group) * tokens_per_row
    permutation = None if rows == list(range(len(rows))) else torch.tensor(rows)
    lora = [s for s in segments if s.adapter is not None]
    if len(lora) < 2:
        return LoraBatch(permutation, segments)
    size = max(s.end - s.start for s in lora)
    lora_rows = lora[-1].end
    pad_index = valid = None
    if any(s.end - s.start != size for s in lora):
        pad_index = torch.tensor([min(s.start + i, s.end - 1) for s in lora for i in range(size)])
        valid = torch.tensor([g * size + i for g, s in enumerate(lora) for i in range(s.end - s.start)])
    stacked = stack_adapters(tuple(s.adapter for s in lora))
    return LoraBatch(permutation, segments, stacked, lora_rows, pad_index, valid, size)


def _order_key(adapter: ServingAdapter | None) -> tuple:
    return (1, "", 0) if adapter is None else (0, adapter.name, adapter.revision)


def add_lora(y: torch.Tensor, x: torch.Tensor, key: str, batch: LoraBatch, shrunk: torch.Tensor | None = None) -> torch.Tensor:
    """Add each row's LoRA delta to the base output ``y`` in place. x: (N, in), y: (N, out), both
    in segment order; for a slots batch, ``shrunk`` (N, C) is the extended matmul's slot columns."""
    if batch.slots is not None:
        if shrunk is not None:
            batch.slots.add(y, shrunk, key, batch)
        return y
    if batch.stacked is not None:
        stacked = batch.stacked.get(key)
        if stacked is not None:
            A, B = stacked  # (G, in, r), (G, r, out)
            rows = x[: batch.lora_rows] if batch.pad_index is None else x[batch.pad_index]
            shrunk = torch.bmm(rows.to(A.dtype).view(A.shape[0], batch.group_size, -1), A)
            if batch.valid is None:  # equal segments: add in place, no intermediate
                y[: batch.lora_rows].view(A.shape[0], batch.group_size, -1).baddbmm_(shrunk, B)
            else:
                y[: batch.lora_rows] += torch.bmm(shrunk, B).flatten(0, 1)[batch.valid]
        return y
    for segment in batch.segments:
        pair = segment.adapter.weights.get(key) if segment.adapter else None
        if pair is None:
            continue
        A, B = pair
        rows = slice(segment.start, segment.end)
        y[rows].addmm_(x[rows].to(A.dtype) @ A.T, B.T)
    return y


def reference_lora_linear(x: torch.Tensor, weight: torch.Tensor, key: str, adapters_N: list[ServingAdapter | None]) -> torch.Tensor:
    """The semantics, one row at a time (tests only)."""
    rows = []
    for x_i, adapter in zip(x, adapters_N):
        y_i = x_i @ weight.T
        if adapter is not None and key in adapter.weights:
            A, B = adapter.weights[key]
            y_i = y_i + ((x_i.to(A.dtype) @ A.T) @ B.T).to(y_i.dtype)
        rows.append(y_i)
    return torch.stack(rows)
