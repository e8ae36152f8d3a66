"""The packed training forward equals each sequence run alone.
Run: pytest tests/mint/test_packed.py"""

import pytest
import torch

from molt.mint import packed
from molt.models import load_model


@pytest.mark.parametrize("source", ["tiny", "tiny:qwen3"])
def test_packed_rows_equal_separate_forwards(source):
    """Three sequences of different lengths in one packed row: every hidden state equals the
    sequence's own forward with transformers' default attention, so no token sees another
    sequence and positions restart at each boundary."""
    reference = load_model(source).model
    model = load_model(source).model
    model.set_attn_implementation(packed.ATTENTION)
    generator = torch.Generator().manual_seed(0)
    sequences = [torch.randint(0, 1000, (n,), generator=generator).tolist() for n in (7, 19, 2)]
    with torch.no_grad():
        hidden = model.model(**packed.packed_inputs(sequences)).last_hidden_state[0]
        alone = torch.cat([reference.model(torch.tensor([s])).last_hidden_state[0] for s in sequences])
    torch.testing.assert_close(hidden, alone, atol=1e-5, rtol=1e-5)
    targets = torch.tensor([t for s in sequences for t in s[1:] + [0]])
    logprobs = packed.target_logprobs(model.lm_head, hidden, targets)
    expected = torch.log_softmax(reference.lm_head(alone), -1).gather(-1, targets[:, None])[:, 0]
    torch.testing.assert_close(logprobs, expected, atol=1e-5, rtol=1e-5)


def test_packed_attention_needs_segment_lengths():
    model = load_model("tiny").model
    model.set_attn_implementation(packed.ATTENTION)
    with pytest.raises(ValueError, match="molt_lengths"):
        model.model(torch.tensor([[1, 2, 3]]))
