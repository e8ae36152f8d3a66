"""Each built-in loss: its value and its gradient against formulas worked out by hand.
Run: pytest tests/mint/test_losses.py"""

import math

import pytest
import torch

from molt.mint.losses import LossInputError, check_inputs, mismatch_metrics, resolve_loss

# Learner logprobs p, sampler logprobs q, advantages A, SFT weights w for 4 positions. The ratios
# p/q are e^0.1, e^-0.5, e^0.4, 1: inside, below and above the default PPO band [0.8, 1.2].
P = [-1.0, -2.0, -0.5, -3.0]
Q = [-1.1, -1.5, -0.9, -3.0]
A = [1.0, 2.0, -1.0, 0.5]
W = [0.0, 1.0, 1.0, 0.0]


def run(name: str, config: dict | None = None) -> tuple[float, list[float]]:
    fn, required, config = resolve_loss(name, config)
    logprobs = torch.tensor(P, requires_grad=True)
    inputs = {"target_tokens": torch.tensor([1, 2, 3, 4]), "weights": torch.tensor(W), "logprobs": torch.tensor(Q), "advantages": torch.tensor(A)}
    check_inputs(name, required, inputs, 4)
    loss = fn(logprobs, inputs, config)
    loss.backward()
    return loss.item(), logprobs.grad.tolist()


def ratios() -> list[float]:
    return [math.exp(p - q) for p, q in zip(P, Q)]


def test_cross_entropy():
    value, grad = run("cross_entropy")
    assert value == pytest.approx(-(-2.0 - 0.5))  # only the weighted positions, summed
    assert grad == pytest.approx([-w for w in W])


def test_importance_sampling():
    value, grad = run("importance_sampling")
    r = ratios()
    assert value == pytest.approx(-sum(ri * a for ri, a in zip(r, A)))
    assert grad == pytest.approx([-ri * a for ri, a in zip(r, A)])  # d(p/q)/dlog p = p/q


def test_ppo_clips_where_the_ratio_leaves_the_band():
    value, grad = run("ppo")
    r = ratios()
    # position 0: r=1.105 inside → unclipped; 1: r=0.607, A>0 → min picks r·A (unclipped, gradient flows);
    # 2: r=1.49, A<0 → min picks r·A (unclipped); 3: r=1 inside. Then a config where clipping bites:
    assert value == pytest.approx(-sum(ri * a for ri, a in zip(r, A)))
    assert grad == pytest.approx([-ri * a for ri, a in zip(r, A)])
    value, grad = run("ppo", {"clip_low_threshold": 0.9, "clip_high_threshold": 1.05})
    # position 0: r=1.105 > 1.05 with A>0 → clipped term 1.05·A is the min: constant, zero gradient
    expected = [min(ri * a, min(max(ri, 0.9), 1.05) * a) for ri, a in zip(r, A)]
    assert value == pytest.approx(-sum(expected))
    assert grad[0] == 0.0 and grad[1:] == pytest.approx([-ri * a for ri, a in zip(r[1:], A[1:])])


def test_cispo_keeps_a_gradient_on_every_token():
    value, grad = run("cispo")
    clipped = [min(max(ri, 0.8), 1.2) for ri in ratios()]
    assert value == pytest.approx(-sum(c * p * a for c, p, a in zip(clipped, P, A)))
    assert grad == pytest.approx([-c * a for c, a in zip(clipped, A)])  # the clipped ratio is detached
    assert all(g != 0 for g in grad)


def test_dro():
    value, grad = run("dro", {"beta": 0.1})
    assert value == pytest.approx(-sum(p * a - 0.05 * (p - q) ** 2 for p, q, a in zip(P, Q, A)))
    assert grad == pytest.approx([-(a - 0.1 * (p - q)) for p, q, a in zip(P, Q, A)])


def test_errors_name_what_is_wrong():
    with pytest.raises(LossInputError, match="unknown loss_fn 'dpo'; built-in losses: cross_entropy, importance_sampling, ppo, cispo, dro"):
        resolve_loss("dpo", None)
    with pytest.raises(LossInputError, match="has no config beta; it takes: clip_low_threshold, clip_high_threshold, icepop_beta"):
        resolve_loss("ppo", {"beta": 0.1})
    with pytest.raises(LossInputError, match=r"needs loss_fn_inputs\['advantages'\]"):
        check_inputs("ppo", ("target_tokens", "logprobs", "advantages"), {"target_tokens": torch.zeros(3), "logprobs": torch.zeros(3)}, 3)
    with pytest.raises(LossInputError, match=r"has shape \(2,\); expected \(3,\)"):
        check_inputs("cross_entropy", ("target_tokens", "weights"), {"target_tokens": torch.zeros(3), "weights": torch.zeros(2)}, 3)


def test_truncated_importance_sampling_caps_the_gradient_weight():
    """TIS: each token's gradient weight is min(p/q, cap), taken as a constant."""
    value, grad = run("importance_sampling", {"tis_cap": 1.2})
    weights = [min(ri, 1.2) for ri in ratios()]  # e^0.1, e^-0.5, 1.2 (e^0.4 = 1.49 truncated), 1
    assert weights[2] == 1.2
    assert value == pytest.approx(-sum(w * p * a for w, p, a in zip(weights, P, A)))
    assert grad == pytest.approx([-w * a for w, a in zip(weights, A)])
    with pytest.raises(LossInputError, match="has no config tis_cap"):
        resolve_loss("ppo", {"tis_cap": 2.0})  # truncation belongs to the loss whose weight is the ratio


@pytest.mark.parametrize("name", ["importance_sampling", "ppo", "cispo", "dro"])
def test_icepop_masks_tokens_outside_the_trusted_band(name):
    """β = 1.4: the band is [0.714, 1.4]; positions 1 (r = 0.607) and 2 (r = 1.49) leave it and
    get no loss and no gradient; the others are as without IcePop."""
    plain_value, plain_grad = run(name)
    value, grad = run(name, {"icepop_beta": 1.4})
    assert grad[1] == 0.0 and grad[2] == 0.0
    assert [grad[0], grad[3]] == pytest.approx([plain_grad[0], plain_grad[3]])
    if name == "importance_sampling":
        r = ratios()
        assert value == pytest.approx(-(r[0] * A[0] + r[3] * A[3]))
    assert value != pytest.approx(plain_value)


def test_mismatch_metrics_count_only_tokens_with_an_advantage():
    learner = [torch.tensor([-1.0, -2.0, -0.5, -3.0, -0.5])]
    inputs = [{"logprobs": torch.tensor([-1.1, -1.5, -0.9, -3.0, 0.0]), "advantages": torch.tensor([1.0, 2.0, -1.0, 0.5, 0.0])}]
    # the fifth position is a prompt token (sampler logprob 0, advantage 0): its ratio e^-0.5 is
    # outside the band but it is not counted
    metrics = mismatch_metrics(learner, inputs, {"icepop_beta": 1.4, "tis_cap": 1.2})
    assert metrics == pytest.approx({"icepop_masked:mean": 2 / 4, "tis_truncated:mean": 1 / 4})
    assert mismatch_metrics(learner, inputs, {"icepop_beta": 0.0, "tis_cap": 0.0}) == {}
