"""Sampling saved revisions through the engine, with logprobs the learner agrees with.
Run: pytest tests/mint/test_sampling.py"""

import pytest
import torch

from molt.mint import AdamParams, Datum, ModelInput, SamplingParams
from molt.mint.checkpoints import CheckpointError
from test_backend import SEQUENCE, datum


@pytest.fixture(scope="module")
def trained(service):
    client = service.create_lora_training_client("tiny", rank=4, seed=21)
    for _ in range(4):
        client.forward_backward([datum("cross_entropy")], "cross_entropy")
        client.optim_step(AdamParams(learning_rate=1e-2))
    return service, client, client.save_weights_and_get_sampling_client("s1")


def learner_logprobs(client, tokens: list[int]) -> torch.Tensor:
    d = Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
    return client.forward([d], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch()


def test_sampler_logprobs_equal_the_learners(trained):
    """RL compares sampler and learner logprobs token by token; in float32 on one machine they
    must agree, so the importance ratio starts at 1."""
    _, client, sampler = trained
    prompt = SEQUENCE[:6]
    response = sampler.sample(ModelInput.from_ints(prompt), 2, SamplingParams(max_tokens=8, temperature=1.0, seed=3)).result()
    for sequence in response.sequences:
        assert len(sequence.tokens) == len(sequence.logprobs) > 0
        learner = learner_logprobs(client, prompt + sequence.tokens)[len(prompt) - 1 :]
        torch.testing.assert_close(torch.tensor(sequence.logprobs), learner, atol=1e-4, rtol=1e-4)


def test_compute_logprobs_and_seeds(trained):
    service, client, sampler = trained
    scored = sampler.compute_logprobs(ModelInput.from_ints(SEQUENCE)).result()
    assert scored[0] is None
    torch.testing.assert_close(torch.tensor(scored[1:]), learner_logprobs(client, SEQUENCE), atol=1e-4, rtol=1e-4)
    params = SamplingParams(max_tokens=6, temperature=1.0, seed=7)
    a = sampler.sample(ModelInput.from_ints(SEQUENCE[:4]), 3, params).result()
    b = sampler.sample(ModelInput.from_ints(SEQUENCE[:4]), 3, params).result()
    assert [s.tokens for s in a.sequences] == [s.tokens for s in b.sequences]
    assert len({tuple(s.tokens) for s in a.sequences}) == 3


def test_stop_tokens_and_sampling_by_path(trained):
    service, client, sampler = trained
    free = sampler.sample(ModelInput.from_ints(SEQUENCE[:4]), 1, SamplingParams(max_tokens=10, temperature=1.0, seed=2)).result().sequences[0]
    stop = free.tokens[3]
    cut = sampler.sample(ModelInput.from_ints(SEQUENCE[:4]), 1, SamplingParams(max_tokens=10, temperature=1.0, seed=2, stop=[stop])).result().sequences[0]
    assert cut.tokens == free.tokens[: free.tokens.index(stop) + 1] and cut.stop_reason == "stop"
    again = service.create_sampling_client(model_path=f"molt://{client.model_id}/s1")
    assert again.sample(ModelInput.from_ints(SEQUENCE[:4]), 1, SamplingParams(max_tokens=10, temperature=1.0, seed=2)).result().sequences[0].tokens == free.tokens
    with pytest.raises(CheckpointError, match="no sampler revision"):
        service.create_sampling_client(model_path="molt://nobody/nothing")
