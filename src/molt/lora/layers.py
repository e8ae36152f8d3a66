"""Mixed-adapter LoRA on a batch: each row may use a different adapter, or none.

The delta is computed grouped by adapter — one small (x A^T) B^T pair per adapter present in the
batch — never by gathering a weight matrix per token (the S-LoRA/Punica idea, written for the CPU
where the grouped matmuls are already near the memory-bandwidth limit). Rows with no adapter
skip the LoRA path entirely; a batch that is all one adapter does no index work at all.

Semantics (the reference every faster backend must match), for each row i with adapter a(i):
    y[i] = x[i] W^T + scaling[a] * (x[i] A[a]^T) B[a]^T
"""

from dataclasses import dataclass

import torch

from molt.lora.format import LoraAdapter


@dataclass(frozen=True)
class ServingAdapter:
    """An adapter prepared for serving: serving dtype, scaling folded into B."""

    name: str
    revision: int
    """Increases each time a name is (re)loaded; a running request keeps the revision it started with."""
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]]
    """Module name → (A (r, in), scaling·B (out, r))."""
    num_bytes: int

    @classmethod
    def prepare(cls, adapter: LoraAdapter, revision: int, dtype: torch.dtype) -> "ServingAdapter":
        weights = {
            module: (A.to(dtype).contiguous(), (B * adapter.scaling).to(dtype).contiguous())
            for module, (A, B) in adapter.weights.items()
        }
        return cls(adapter.name, revision, weights, adapter.num_bytes)


@dataclass(frozen=True)
class AdapterGroup:
    adapter: ServingAdapter
    rows: torch.Tensor | None
    """Row indices into the flattened batch; None means every row."""


def group_rows(adapters_B: list[ServingAdapter | None], tokens_per_row: int) -> list[AdapterGroup]:
    """Group batch rows by adapter, expanding each row to its ``tokens_per_row`` flattened tokens."""
    by_adapter: dict[int, tuple[ServingAdapter, list[int]]] = {}
    for row, adapter in enumerate(adapters_B):
        if adapter is not None:
            by_adapter.setdefault(id(adapter), (adapter, []))[1].append(row)
    if len(by_adapter) == 1:
        adapter, rows = next(iter(by_adapter.values()))
        if len(rows) == len(adapters_B):
            return [AdapterGroup(adapter, None)]
    groups = []
    for adapter, rows in by_adapter.values():
        index = torch.tensor(rows)
        if tokens_per_row > 1:
            index = (index[:, None] * tokens_per_row + torch.arange(tokens_per_row)).flatten()
        groups.append(AdapterGroup(adapter, index))
    return groups


def lora_linear(x: torch.Tensor, linear: torch.nn.Linear, module: str, groups: list[AdapterGroup]) -> torch.Tensor:
    """``linear(x)`` plus each group's LoRA delta on its rows. x: (N, in) → (N, out)."""
    y = torch.nn.functional.linear(x, linear.weight, linear.bias)
    for group in groups:
        pair = group.adapter.weights.get(module)
        if pair is None:
            continue
        A, B = pair
        if group.rows is None:
            y.addmm_(x @ A.T, B.T)
        else:
            y.index_add_(0, group.rows, (x.index_select(0, group.rows) @ A.T) @ B.T)
    return y
