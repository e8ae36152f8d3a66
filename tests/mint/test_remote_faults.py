"""Training against a remote ``molt mint serve`` (another process, over the Tinker protocol) through
a faulty network: connections reset after the server got the call, calls dropped before it, a
reply held past the client's timeout, a call delivered twice. Every optimizer step is applied
exactly once: the run's weights equal those of the same run without faults, and the steps count
1, 2, 3… with no gap or repeat. ``molt rl`` completes through the same faults.
Run: pytest tests/mint/test_remote_faults.py"""

import pytest
import torch

from faulty_network import Fault, FaultyRelay
from molt.mint import ServiceClient
from molt.mint import remote
from molt.mint.remote import MintServerError
from molt.mint.types import AdamParams, Datum, ModelInput
from molt_processes import free_port, start_mint

STEPS = 5
FAULTS = [
    Fault("/forward_backward", 2, "reset"),
    Fault("/optim_step", 2, "duplicate"),
    Fault("/optim_step", 3, "reset"),
    Fault("/forward_backward", 4, "drop"),
    Fault("/retrieve_future", 3, "reset"),
    Fault("/optim_step", 5, "timeout"),
    Fault("/forward_backward", 6, "duplicate"),
]


@pytest.fixture(scope="module")
def mint_url():
    port = free_port()
    server = start_mint(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=60)


def datum(tokens: list[int]) -> Datum:
    return Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})


def train(url: str) -> tuple[list[float], torch.Tensor]:
    """STEPS steps of forward_backward + optim_step; (the step numbers the server reported, the
    logprobs of a probe under the final weights)."""
    service = ServiceClient(base_url=url, api_timeout=5.0)  # the held reply times out in 5 s, not 10 min
    training = service.create_lora_training_client("tiny", rank=4, seed=0)
    steps = []
    for step in range(STEPS):
        batch = [datum([(step * 7 + i * 3 + j) % 90 + 1 for j in range(12)]) for i in range(3)]
        training.forward_backward(batch, "cross_entropy").result()
        steps.append(training.optim_step(AdamParams(learning_rate=5e-2)).result()["step"])
    probe = training.forward([datum(list(range(1, 20)))], "cross_entropy").result()
    return steps, probe.loss_fn_outputs[0]["logprobs"].to_torch()


def test_every_step_is_applied_exactly_once_through_a_faulty_network(mint_url):
    steps, clean = train(mint_url)
    assert steps == [1.0, 2.0, 3.0, 4.0, 5.0]
    with FaultyRelay(mint_url, FAULTS, hold_s=8.0) as relay:
        faulty_steps, faulty = train(relay.url)
    assert sorted(map(repr, relay.fired)) == sorted(map(repr, FAULTS))  # each fault really happened
    assert relay.seen["/api/v1/optim_step"] > STEPS  # the client sent some steps again
    assert faulty_steps == steps
    assert torch.equal(faulty, clean)  # a step or a gradient applied twice would move these


def test_a_network_that_never_answers_fails_clearly(mint_url, monkeypatch):
    monkeypatch.setattr(remote, "BACKOFF_S", 0.01)  # seven tries, without the real pauses
    with FaultyRelay(mint_url, [Fault("/optim_step", n, "drop") for n in range(1, 10)]) as relay:
        training = ServiceClient(base_url=relay.url, api_timeout=5.0).create_lora_training_client("tiny", rank=4, seed=0)
        with pytest.raises(MintServerError, match="did not answer after 7 tries"):
            training.optim_step(AdamParams(learning_rate=1e-3)).result()
    assert relay.seen["/api/v1/optim_step"] == 7
