"""The engine's own forward pass against transformers. Run: pytest tests/engine/test_model.py"""

import pytest
import torch

from molt.engine.model import EngineModel
from molt.models import load_model

PROMPT = [1, 4093, 198, 6004, 2, 198, 1, 520, 9531, 198, 504, 8715, 476]


@pytest.mark.parametrize("source", ["tiny", "tiny:qwen3"])
def test_chunked_prefill_and_batched_decode_match_transformers(source):
    """Prefill in uneven chunks into slot 0, a shorter prompt into slot 1, then one batched decode
    step over both rows of different lengths: every logit equals transformers' full forward."""
    reference = load_model(source, seed=3).model
    engine = EngineModel(load_model(source, seed=3), torch.float32)
    cache = engine.new_cache(num_slots=3, max_len=64)
    first, second = PROMPT, PROMPT[:7]
    with torch.no_grad():
        expected_first = reference(torch.tensor([first + [42]])).logits[0]
        expected_second = reference(torch.tensor([second + [43]])).logits[0]
    a = engine.forward(torch.tensor([first[:5]]), [0], 0, cache, [None], all_logits=True)[0]
    b = engine.forward(torch.tensor([first[5:]]), [5], 0, cache, [None], all_logits=True)[0]
    c = engine.forward(torch.tensor([second]), [0], 1, cache, [None], all_logits=True)[0]
    torch.testing.assert_close(torch.cat([a, b]), expected_first[: len(first)], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(c, expected_second[: len(second)], atol=1e-5, rtol=1e-4)
    step = engine.forward(torch.tensor([[42], [43]]), [len(first), len(second)], 0, cache, [None, None])[:, -1]
    torch.testing.assert_close(step[0], expected_first[-1], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(step[1], expected_second[-1], atol=1e-5, rtol=1e-4)


def test_bf16_stays_close_to_fp32():
    fp32 = EngineModel(load_model("tiny"), torch.float32)
    bf16 = EngineModel(load_model("tiny"), torch.bfloat16)
    tokens = torch.tensor([PROMPT])
    a = fp32.forward(tokens, [0], 0, fp32.new_cache(1, 32), [None], all_logits=True)
    b = bf16.forward(tokens, [0], 0, bf16.new_cache(1, 32), [None], all_logits=True)
    assert b.dtype == torch.float32 and (a - b).abs().max() < 0.05 * a.abs().max()


def test_packed_weights_give_identical_logits():
    """oneDNN-packed weights are a layout change only: logits must be bit-identical to plain ones."""
    packed = EngineModel(load_model("tiny"), torch.bfloat16, packed=True)
    plain = EngineModel(load_model("tiny"), torch.bfloat16, packed=False)
    tokens = torch.tensor([PROMPT])
    a = packed.forward(tokens, [0], 0, packed.new_cache(1, 32), [None], all_logits=True)
    b = plain.forward(tokens, [0], 0, plain.new_cache(1, 32), [None], all_logits=True)
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_resident_adapters_as_slots_match_the_grouped_path(tmp_path, dtype):
    """The same mixed batch (three adapters of different ranks and targets, one on the unembedding,
    and a base-only row) through the slots and through the grouped segments: same logits, rows in
    any order; dropping the slots gives back the base weights exactly."""
    from molt.lora.format import read_adapter
    from molt.lora.layers import ServingAdapter
    from molt.lora.synthetic import write_random_adapter

    engine = EngineModel(load_model("tiny"), dtype)
    plan = [(2, ("q_proj", "v_proj")), (4, ("gate_proj", "up_proj", "down_proj", "o_proj")), (8, ("k_proj", "lm_head"))]
    adapters = [
        ServingAdapter.prepare(read_adapter(write_random_adapter(tmp_path / f"a{i}", engine.model, "tiny", r=r, targets=t, seed=i)), i + 1, dtype, engine.layout)
        for i, (r, t) in enumerate(plan)
    ]
    a, b, c = adapters
    rows = [c, None, a, b, a, c]
    tokens = torch.tensor([PROMPT[i : i + 4] for i in range(len(rows))])

    def run() -> torch.Tensor:
        cache = engine.new_cache(len(rows), 32)
        prefill = engine.forward(tokens, [0] * len(rows), 0, cache, rows, all_logits=True)
        decode = engine.forward(tokens[:, :1], [4] * len(rows), 0, cache, rows)
        return torch.cat([prefill, decode], dim=1)

    base = engine.forward(tokens, [0] * len(rows), 0, engine.new_cache(len(rows), 32), [None] * len(rows), all_logits=True)
    grouped = run()
    engine.reside(tuple(adapters))
    assert engine.slots.adapters == tuple(adapters) and engine.weights[0]["model.layers.0.qkv"].shape[0] > engine.slots.rows("model.layers.0.qkv")
    slotted = run()
    tolerance = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=0.1, rtol=0.05)
    torch.testing.assert_close(slotted, grouped, **tolerance)
    assert not torch.allclose(grouped[0, :4], base[0], **tolerance)  # the adapters really contribute
    engine.reside(())
    again = engine.forward(tokens, [0] * len(rows), 0, engine.new_cache(len(rows), 32), [None] * len(rows), all_logits=True)
    assert torch.equal(again, base)
