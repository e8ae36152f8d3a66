"""Tinker-compatible types: conversions and JSON round trips. Run: pytest tests/mint/test_types.py"""

import numpy as np
import pytest
import torch
from pydantic import ValidationError

from molt.mint import AdamParams, Datum, LoraConfig, ModelInput, SamplingParams, TensorData


def test_model_input_chunks():
    model_input = ModelInput.from_ints([1, 2, 3]).append_int(4)
    assert model_input.to_ints() == [1, 2, 3, 4] and model_input.length == 4 and len(model_input.chunks) == 2
    assert ModelInput.empty().length == 0


@pytest.mark.parametrize(
    "value,dtype",
    [(torch.tensor([[1, 2], [3, 4]]), torch.int64), (np.array([0.5, -1.25], dtype=np.float32), torch.float32), ([1.0, 2.0], torch.float32)],
)
def test_datum_accepts_torch_numpy_and_lists(value, dtype):
    datum = Datum(model_input=ModelInput.from_ints([1, 2]), loss_fn_inputs={"x": value})
    tensor = datum.loss_fn_inputs["x"].to_torch()
    assert tensor.dtype == dtype
    assert torch.equal(tensor, torch.as_tensor(np.asarray(value), dtype=dtype))


def test_datum_json_round_trip():
    datum = Datum(
        model_input=ModelInput.from_ints([5, 6, 7]),
        loss_fn_inputs={"target_tokens": torch.tensor([6, 7, 8]), "weights": torch.tensor([0.0, 1.0, 1.0])},
    )
    again = Datum.model_validate_json(datum.model_dump_json())
    assert again == datum and again.loss_fn_inputs["weights"].to_numpy().tolist() == [0.0, 1.0, 1.0]


def test_defaults_match_tinker():
    assert (AdamParams().beta1, AdamParams().beta2, AdamParams().eps) == (0.9, 0.95, 1e-12)
    assert (SamplingParams().temperature, SamplingParams().top_k, SamplingParams().top_p) == (1.0, -1, 1.0)
    config = LoraConfig()
    assert (config.rank, config.train_mlp, config.train_attn, config.train_unembed) == (32, True, True, True)


@pytest.mark.parametrize("bad", [dict(learning_rate=0), dict(learning_rate=-1e-3), dict(beta2=1.0), dict(grad_clip_norm=-1)])
def test_bad_hyperparameters_are_refused(bad):
    with pytest.raises(ValidationError):
        AdamParams(**bad)
    with pytest.raises(ValidationError):
        LoraConfig(rank=0)


def test_tensor_data_keeps_shape():
    data = TensorData.from_torch(torch.arange(6).reshape(2, 3))
    assert data.shape == [2, 3] and data.to_torch().tolist() == [[0, 1, 2], [3, 4, 5]]
