"""Mixed-adapter LoRA on a batch: each row may use a different adapter, or none.

Semantics (``reference_lora_linear`` is this loop; the fast path must match it), for each row i
with adapter a(i):
    y[i] = x[i] W^T + scaling[a] * (x[i] A[a]^T) B[a]^T

The fast path computes the delta grouped by adapter: the engine orders rows so that each
adapter's rows form one contiguous segment, and each segment costs one small matmul pair on
row views — never a weight gather per token (the S-LoRA/Punica idea, written for the CPU).
Rows with no adapter skip the LoRA path; a batch that is all one adapter is one segment.

Fused projections: the engine runs q/k/v and gate/up as single matmuls, so an adapter is
prepared against a *layout*: for each fused weight, which base modules it stacks and at which
output rows. The adapter's A matrices are stacked and its B matrices placed block-diagonally,
so one matmul pair serves every targeted module of a fused weight.
"""

from dataclasses import dataclass

import torch

from molt.lora.format import LoraAdapter

Layout = dict[str, list[tuple[str, int, int]]]
"""Fused weight name → [(base module name, first output row, end output row)]."""


@dataclass(frozen=True)
class ServingAdapter:
    """An adapter prepared for serving: serving dtype, scaling folded in, fused to the engine's layout."""

    name: str
    revision: int
    """Increases each time a name is (re)loaded; a running request keeps the revision it started with."""
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]]
    """Fused weight name → (A (r_total, in), scaling·B (out, r_total))."""
    num_bytes: int

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
        return cls(adapter.name, revision, weights, adapter.num_bytes)


@dataclass(frozen=True)
class Segment:
    adapter: ServingAdapter | None
    start: int
    end: int


def plan_segments(adapters_B: list[ServingAdapter | None]) -> tuple[torch.Tensor | None, list[Segment]]:
    """Order rows so each adapter's rows are contiguous. Returns the permutation (None when the
    rows are already in order) and the segments in permuted order."""
    order: dict[int, list[int]] = {}
    for row, adapter in enumerate(adapters_B):
        order.setdefault(id(adapter), []).append(row)
    rows = [row for group in order.values() for row in group]
    segments, start = [], 0
    for group in order.values():
        segments.append(Segment(adapters_B[group[0]], start, start + len(group)))
        start += len(group)
    permutation = None if rows == list(range(len(rows))) else torch.tensor(rows)
    return permutation, segments


def lora_linear(x: torch.Tensor, weight: torch.Tensor, key: str, segments: list[Segment], tokens_per_row: int = 1) -> torch.Tensor:
    """``x W^T`` plus each segment's LoRA delta on its rows. x: (N, in) → (N, out)."""
    y = torch.nn.functional.linear(x, weight)
    for segment in segments:
        pair = segment.adapter.weights.get(key) if segment.adapter else None
        if pair is None:
            continue
        A, B = pair
        start, end = segment.start * tokens_per_row, segment.end * tokens_per_row
        if start == 0 and end == x.shape[0]:
            y.addmm_(x @ A.T, B.T)
        else:
            y[start:end].addmm_(x[start:end] @ A.T, B.T)
    return y


def reference_lora_linear(x: torch.Tensor, weight: torch.Tensor, key: str, adapters_N: list[ServingAdapter | None]) -> torch.Tensor:
    """The semantics, one row at a time (tests only)."""
    rows = []
    for x_i, adapter in zip(x, adapters_N):
        y_i = x_i @ weight.T
        if adapter is not None and key in adapter.weights:
            A, B = adapter.weights[key]
            y_i = y_i + (x_i @ A.T) @ B.T
        rows.append(y_i)
    return torch.stack(rows)
