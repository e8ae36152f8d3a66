"""The local training backend through Tinker's client API, on the tiny model.
Run: pytest tests/mint/test_backend.py"""

import asyncio
import math

import pytest
import torch

from molt.mint import AdamParams, Datum, ModelInput
from molt.lora.format import read_adapter
from molt.mint.checkpoints import resolve
from molt.mint.losses import LossInputError
from molt.models import load_model

SEQUENCE = [1, 4093, 198, 6004, 2, 198, 1, 520, 9531, 198, 504, 8715]


def datum(loss: str) -> Datum:
    tokens, targets = SEQUENCE[:-1], SEQUENCE[1:]
    n = len(tokens)
    inputs = {"target_tokens": targets, "weights": [0.0] * 4 + [1.0] * (n - 4)}
    if loss != "cross_entropy":
        inputs = {"target_tokens": targets, "logprobs": [-10.5 + 0.1 * i for i in range(n)], "advantages": [(-1) ** i * 0.5 for i in range(n)]}
    return Datum(model_input=ModelInput.from_ints(tokens), loss_fn_inputs=inputs)


def coefficient(loss: str, p: torch.Tensor, d: Datum, config: dict) -> torch.Tensor:
    """dL/dlog p per token, derived by hand for each loss (see molt/mint/losses.py)."""
    if loss == "cross_entropy":
        return -d.loss_fn_inputs["weights"].to_torch()
    q, a = d.loss_fn_inputs["logprobs"].to_torch(), d.loss_fn_inputs["advantages"].to_torch()
    r = torch.exp(p - q)
    if loss == "importance_sampling":
        return -r * a
    if loss == "ppo":
        low, high = config.get("clip_low_threshold", 0.8), config.get("clip_high_threshold", 1.2)
        clipped_is_min = (r.clamp(low, high) * a < r * a) & ((r < low) | (r > high))
        return torch.where(clipped_is_min, torch.zeros_like(r), -r * a)
    if loss == "cispo":
        return -r.clamp(0.8, 1.2) * a
    return -(a - config["beta"] * (p - q))


def value(loss: str, p: torch.Tensor, d: Datum, config: dict) -> float:
    if loss == "cross_entropy":
        return float(-(p * d.loss_fn_inputs["weights"].to_torch()).sum())
    q, a = d.loss_fn_inputs["logprobs"].to_torch(), d.loss_fn_inputs["advantages"].to_torch()
    r = torch.exp(p - q)
    if loss == "importance_sampling":
        return float(-(r * a).sum())
    if loss == "ppo":
        return float(-torch.minimum(r * a, r.clamp(0.8, 1.2) * a).sum())
    if loss == "cispo":
        return float(-(r.clamp(0.8, 1.2) * p * a).sum())
    return float(-(p * a - 0.5 * config["beta"] * (p - q) ** 2).sum())


LOSSES = [("cross_entropy", {}), ("importance_sampling", {}), ("ppo", {}), ("cispo", {}), ("dro", {"beta": 0.1})]


def base_reference(d: Datum):
    """The base's hidden states h (T, hidden), log-softmax (T, V) and target logprobs p (T,)."""
    base = load_model("tiny").model
    with torch.no_grad():
        h = base.model(torch.tensor([d.model_input.to_ints()])).last_hidden_state[0]
        log_softmax = torch.log_softmax(base.lm_head(h), -1)
    targets = d.loss_fn_inputs["target_tokens"].to_torch()
    return h, log_softmax, log_softmax.gather(-1, targets[:, None])[:, 0]


def expected_unembed_gradient(loss: str, d: Datum, config: dict, lora_A: torch.Tensor) -> torch.Tensor:
    """A fresh policy has lora_B = 0, so it equals the base. With g_t = dL/dlog p_t derived by hand,
    the gradient of the unembedding's lora_B is Σ_t g_t (onehot_t − softmax_t)ᵀ (h_t Aᵀ) (scaling 1)."""
    h, log_softmax, p = base_reference(d)
    targets = d.loss_fn_inputs["target_tokens"].to_torch()
    g = coefficient(loss, p, d, config)
    dlogits = g[:, None] * (torch.nn.functional.one_hot(targets, log_softmax.shape[-1]) - log_softmax.exp())  # (T, V)
    return dlogits.T @ (h @ lora_A.T)  # (V, r)


@pytest.mark.parametrize("loss,config", LOSSES)
def test_loss_value_logprobs_and_first_step_match_hand_computation(service, loss, config):
    """Through the public API on either transport: the loss and logprobs equal the hand-computed
    ones, and the first AdamW step moves each lora_B entry by −lr·sign(gradient) (Adam's first
    step is the gradient's sign), read back from the exported revision."""
    client = service.create_lora_training_client("tiny", rank=4, seed=1)
    d = datum(loss)
    out = client.forward_backward([d], loss, config).result()
    _, _, p = base_reference(d)
    assert out.metrics["loss:sum"] == pytest.approx(value(loss, p, d, config), rel=1e-4, abs=1e-4)
    torch.testing.assert_close(out.loss_fn_outputs[0]["logprobs"].to_torch(), p, atol=1e-5, rtol=1e-5)
    lr = 1e-3
    client.optim_step(AdamParams(learning_rate=lr)).result()
    path = client.save_weights_for_sampler(f"first-step-{loss}").result()
    lora_A, lora_B = read_adapter(resolve(path)).weights["lm_head"]
    expected = expected_unembed_gradient(loss, d, config, lora_A)
    clear = expected.abs() > 1e-6
    assert clear.sum() > 100
    torch.testing.assert_close(lora_B[clear], -lr * expected.sign()[clear], atol=lr * 1e-3, rtol=0)


@pytest.mark.parametrize("loss,config", LOSSES)
def test_gradient_equals_hand_computation(local_service, loss, config):
    """The exact gradient, before any optimizer step (in-process: it reads the backend)."""
    client = local_service.create_lora_training_client("tiny", rank=4, seed=1)
    client.forward_backward([datum(loss)], loss, config).result()
    run = local_service.transport.run(client.model_id)
    lm_head = run.backend.model.base_model.model.lm_head
    expected = expected_unembed_gradient(loss, datum(loss), config, lm_head.lora_A[client.model_id].weight)
    torch.testing.assert_close(lm_head.lora_B[client.model_id].weight.grad, expected * lm_head.scaling[client.model_id], atol=1e-5, rtol=1e-4)
    client.optim_step(AdamParams(learning_rate=1e-3)).result()
    assert all(p.grad is None for p in run.policy.parameters)


def test_gradients_accumulate_until_optim_step(service):
    """Two forward_backward calls before a step accumulate twice the gradient (the step reports
    its norm); the step then clears it, so the next step starts from zero."""
    once, twice = (service.create_lora_training_client("tiny", rank=4, seed=2) for _ in range(2))
    d = datum("cross_entropy")
    once.forward_backward([d], "cross_entropy")
    twice.forward_backward([d], "cross_entropy")
    twice.forward_backward([d], "cross_entropy")
    norm_once = once.optim_step(AdamParams(learning_rate=1e-2)).result()
    norm_twice = twice.optim_step(AdamParams(learning_rate=1e-2)).result()
    assert norm_once["step"] == 1.0 and norm_once["grad_norm"] > 0
    assert norm_twice["grad_norm"] == pytest.approx(2 * norm_once["grad_norm"], rel=1e-5)
    assert once.optim_step(AdamParams(learning_rate=1e-2)).result()["grad_norm"] == 0.0


def test_training_lowers_the_loss_and_policies_stay_independent(service):
    """Submit forward_backward and optim_step back to back without waiting (as Tinker users do):
    the calls run in order and the memorisation loss falls. Another policy on the same resident
    base is untouched."""
    learner = service.create_lora_training_client("tiny", rank=8, seed=3)
    bystander = service.create_lora_training_client("tiny", rank=8, seed=4)
    d = datum("cross_entropy")
    before = bystander.forward([d], "cross_entropy").result()
    futures = []
    for _ in range(15):
        futures.append(learner.forward_backward([d], "cross_entropy"))
        learner.optim_step(AdamParams(learning_rate=2e-2))
    losses = [f.result().metrics["loss:sum"] for f in futures]
    assert losses[-1] < 0.5 * losses[0]
    after = bystander.forward([d], "cross_entropy").result()
    assert after.metrics["loss:sum"] == pytest.approx(before.metrics["loss:sum"], abs=1e-6)


def test_async_twins(service):
    client = service.create_lora_training_client("tiny", rank=4, seed=5)

    async def run():
        future = await client.forward_backward_async([datum("cross_entropy")], "cross_entropy")
        return await future.result_async()

    assert math.isfinite(asyncio.run(run()).metrics["loss:sum"])


def test_custom_loss_sends_its_exact_gradient(service):
    """A custom loss written by hand as weighted cross-entropy must leave the same gradient (norm
    reported by the step) as the built-in one; its metrics come back with the loss."""
    builtin, custom = (service.create_lora_training_client("tiny", rank=4, seed=6) for _ in range(2))
    d = datum("cross_entropy")

    def weighted_nll(data, logprobs):
        loss = sum(-(lp * x.loss_fn_inputs["weights"].to_torch()).sum() for x, lp in zip(data, logprobs))
        return loss, {"tokens": float(sum(x.model_input.length for x in data))}

    expected = builtin.forward_backward([d], "cross_entropy").result()
    out = custom.forward_backward_custom([d], weighted_nll).result()
    assert out.metrics["loss:sum"] == pytest.approx(expected.metrics["loss:sum"], rel=1e-5)
    assert out.metrics["tokens"] == d.model_input.length
    norms = [c.optim_step(AdamParams()).result()["grad_norm"] for c in (builtin, custom)]
    assert norms[1] == pytest.approx(norms[0], rel=1e-5) and norms[0] > 0


def test_bad_requests_fail_with_clear_errors(service):
    client = service.create_lora_training_client("tiny", rank=4, seed=7)
    with pytest.raises(LossInputError, match="unknown loss_fn 'mse'"):
        client.forward_backward([datum("cross_entropy")], "mse").result()
    with pytest.raises(LossInputError, match=r"needs loss_fn_inputs\['logprobs'\]"):
        client.forward_backward([datum("cross_entropy")], "ppo").result()
    with pytest.raises(ValueError, match="at least one Datum"):
        client.forward_backward([], "cross_entropy").result()
    with pytest.raises(ValueError, match="trains nothing"):
        service.create_lora_training_client("tiny", train_mlp=False, train_attn=False, train_unembed=False)
