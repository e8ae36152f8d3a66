"""The mixed-adapter LoRA kernel against its one-row-at-a-time reference.
Run: pytest tests/lora/test_layers.py"""

import pytest
import torch

from molt.engine.adapter_slots import AdapterSlots
from molt.engine.linear import linear
from molt.lora.format import read_adapter
from molt.lora.layers import ServingAdapter, add_lora, plan_batch, reference_lora_linear
from molt.lora.synthetic import write_random_adapter


@pytest.fixture(scope="module")
def adapters(tmp_path_factory):
    """Three adapters of different ranks over a fused (q, k, v) layout of the tiny model's layer 0."""
    from molt.models import load_model

    base = load_model("tiny").model
    root = tmp_path_factory.mktemp("layers")
    layout = {"qkv": [("model.layers.0.self_attn.q_proj", 0, 64), ("model.layers.0.self_attn.k_proj", 64, 96), ("model.layers.0.self_attn.v_proj", 96, 128)]}
    prepared = []
    for i, (r, targets) in enumerate([(2, ("q_proj",)), (4, ("q_proj", "v_proj")), (8, ("k_proj", "v_proj", "q_proj"))]):
        path = write_random_adapter(root / f"a{i}", base, "tiny", r=r, targets=targets, seed=i)
        prepared.append(ServingAdapter.prepare(read_adapter(path), i + 1, torch.float32, layout))
    return prepared


PATTERNS = ["all-none", "one-adapter", "interleaved", "with-none", "equal-groups"]


def rows_of(pattern: str, adapters: list[ServingAdapter]) -> list[ServingAdapter | None]:
    a, b, c = adapters
    return {
        "all-none": [None] * 5,
        "one-adapter": [b] * 5,
        "interleaved": [a, b, c, a, c, b, a],  # unequal segments: padded grouped GEMM
        "with-none": [None, c, None, a, c],
        "equal-groups": [a, b, a, b],  # equal segments: grouped GEMM without padding
    }[pattern]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_segments_match_the_reference(adapters, pattern):
    """Rows are permuted into adapter segments, run through the kernel and permuted back; every
    row must equal the reference computed row by row with its own adapter."""
    rows = rows_of(pattern, adapters)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(len(rows), 64, generator=generator)
    weight = torch.randn(128, 64, generator=generator)
    expected = reference_lora_linear(x, weight, "qkv", rows)
    batch = plan_batch(rows)
    permutation = batch.permutation
    assert (batch.stacked is not None) == (pattern in ("interleaved", "with-none", "equal-groups"))
    x_perm = x if permutation is None else x[permutation]
    y_perm = add_lora(x_perm @ weight.T, x_perm, "qkv", batch)
    y = y_perm if permutation is None else y_perm[torch.argsort(permutation)]
    torch.testing.assert_close(y, expected)
    if pattern != "all-none":
        assert not torch.allclose(y, x @ weight.T)  # the adapters really contribute


def test_block_diagonal_fusion_leaves_untargeted_modules_alone(adapters):
    """Adapter a0 targets only q_proj: the k and v rows of the fused output get no delta."""
    a = adapters[0]
    A, B = a.weights["qkv"]
    assert A.shape == (2, 64) and B.shape == (128, 2)
    assert torch.count_nonzero(B[64:]) == 0 and torch.count_nonzero(B[:64]) > 0


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("pattern", PATTERNS)
def test_slots_match_the_reference(adapters, pattern, packed):
    """Resident adapters' shrink rides in the extended base weight: rows stay in place, and each
    row equals the reference with its own adapter, whatever the mix (ranks 2, 4, 8 side by side)."""
    rows = rows_of(pattern, adapters)
    layout = {"qkv": [("q", 0, 64), ("k", 64, 96), ("v", 96, 128)]}
    slots = AdapterSlots(tuple(adapters), layout, packed)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(len(rows), 64, generator=generator)
    weight = torch.randn(128, 64, generator=generator)
    extended = slots.extend("qkv", weight)
    assert extended.shape == (128 + 2 + 2 * 4 + 3 * 8, 64)  # each adapter's rank × modules it targets
    batch = plan_batch(rows, slots=slots)
    assert batch.permutation is None and (batch.slots is slots) == (pattern != "all-none")
    z = linear(x, extended)
    y = add_lora(z[:, :128], x, "qkv", batch, shrunk=z[:, 128:])
    torch.testing.assert_close(y, reference_lora_linear(x, weight, "qkv", rows), atol=1e-5, rtol=1e-4)
    restored = AdapterSlots((), layout, packed).extend("qkv", extended)  # no slots: the base weight again
    assert torch.equal(restored.to_dense() if restored.is_mkldnn else restored, weight)


def test_a_batch_with_an_adapter_outside_the_slots_takes_the_grouped_path(adapters):
    """An adapter revision that is not resident (a request finishing on an older revision) must
    not be served from the slots: the batch falls back to segments."""
    a, b, c = adapters
    slots = AdapterSlots((a, b), {"qkv": [("q", 0, 64), ("k", 64, 96), ("v", 96, 128)]}, False)
    assert plan_batch([a, b, a], slots=slots).slots is slots
    fallback = plan_batch([a, c, b], slots=slots)
    assert fallback.slots is None and fallback.stacked is not None
