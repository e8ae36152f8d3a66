"""LongStraw (``molt.mint.longstraw``) on the tiny model: which datums share a prefix, gradients
equal to plain backprop with the prompt detached, the same outputs through the Tinker HTTP API,
checkpointed long responses, prefixes kept across steps, and the RL loop's calls."""

import pytest
import torch

from molt.bench.longstraw import bench_group, detached_prompt_backward
from molt.forge.loop import _calls
from molt.http_server import ServerThread
from molt.mint import Datum
from molt.mint.backend import LocalBackend
from molt.mint.clients import ServiceClient
from molt.mint.longstraw import LongStraw, plan
from molt.mint.server import create_app
from molt.mint.service import LocalService
from molt.mint.types import AdamParams, LoraConfig

PROMPT, RESPONSE, GROUP = 40, 8, 4


def group(prompt: int = PROMPT, response: int = RESPONSE, size: int = GROUP, seed: int = 0) -> list[Datum]:
    """``size`` RL datums: one random prompt, a different response each, advantages ±1 on it."""
    return bench_group(500, prompt, response, size, seed)


@pytest.fixture(scope="module")
def backend():
    backend = LocalBackend("tiny", torch.float32)
    policy = backend.create_policy("moved", LoraConfig(rank=8, seed=0))
    with torch.no_grad():  # away from lora_B = 0, so every LoRA weight gets a gradient
        for p in policy.parameters:
            p.add_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())) * 0.02)
    return backend


def gradient(backend: LocalBackend, data: list[Datum], settings: LongStraw, loss: str = "importance_sampling"):
    backend.long_context = settings
    policy = backend.policies["moved"]
    out = backend.forward_backward(policy, data, loss, None)
    grad = torch.cat([p.grad.flatten() for p in policy.parameters])
    policy.optimizer.zero_grad(set_to_none=True)
    return out, grad


def detached_reference(backend: LocalBackend, data: list[Datum], prefix: int) -> torch.Tensor:
    """Plain packed backprop with the first ``prefix`` positions' keys and values detached."""
    policy = backend.policies["moved"]
    detached_prompt_backward(backend, policy, data, prefix)
    grad = torch.cat([p.grad.flatten() for p in policy.parameters])
    policy.optimizer.zero_grad(set_to_none=True)
    return grad


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.nn.functional.cosine_similarity(a, b, 0))


def test_plan_shares_only_loss_free_prefixes_of_groups():
    a, b, c = [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9, 9], [7, 7, 7, 7, 7]
    auto = LongStraw(min_prefix=3)
    shared, rest = plan([a, b, c], [5, 5, 4], auto)
    assert [(g.members, g.length) for g in shared] == [([0, 1], 4)] and rest == [2]
    shared, _ = plan([a, b], [2, 5], LongStraw(min_prefix=2))
    assert shared[0].length == 2  # stops where a datum's loss starts
    assert plan([a, b], [2, 5], auto) == ([], [0, 1])  # 2 loss-free tokens < min_prefix
    assert plan([c], [4], auto) == ([], [0])  # auto needs a group
    shared, rest = plan([c], [9], LongStraw(mode="on"))
    assert [(g.members, g.length) for g in shared] == [([0], 4)] and rest == []  # keeps one response token
    assert plan([a, b], [5, 5], LongStraw(mode="off")) == ([], [0, 1])
    system, first, second = [1] * 4, [2, 2, 2], [3, 3, 3]  # two problems after one system prompt
    answers = [system + first + [9, i] for i in range(3)] + [system + second + [8, i] for i in range(3)]
    shared, _ = plan(answers, [7] * 6, LongStraw(min_prefix=4))
    assert sorted((sorted(g.members), g.length) for g in shared) == [([0, 1, 2], 7), ([3, 4, 5], 7)]
    with pytest.raises(ValueError, match="auto, on, off"):
        LongStraw(mode="sometimes")


def test_gradient_equals_plain_backprop_with_the_prompt_detached(backend):
    data = group()
    longstraw, grad = gradient(backend, data, LongStraw(min_prefix=16))
    plain, full = gradient(backend, data, LongStraw(mode="off"))
    assert longstraw.metrics["longstraw_groups:sum"] == 1 and longstraw.metrics["longstraw_prefix_tokens:sum"] == PROMPT - 1
    assert "longstraw_groups:sum" not in plain.metrics
    reference = detached_reference(backend, data, PROMPT - 1)
    assert cosine(grad, reference) >= 0.9999
    assert float((grad - reference).abs().max() / reference.abs().max()) < 1e-4
    assert cosine(grad, full) < 0.9999  # the prompt's own gradient path is what LongStraw gives up
    assert longstraw.metrics["loss:sum"] == pytest.approx(plain.metrics["loss:sum"], rel=1e-5)
    for a, b in zip(longstraw.loss_fn_outputs, plain.loss_fn_outputs):
        torch.testing.assert_close(a["logprobs"].to_torch(), b["logprobs"].to_torch(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("checkpoint_from", [4096, 8])
def test_exact_mode_gives_full_backprops_gradient(backend, checkpoint_from):
    data = group()
    out, exact = gradient(backend, data, LongStraw(min_prefix=16, exact=True, checkpoint_from=checkpoint_from))
    _, full = gradient(backend, data, LongStraw(mode="off"))
    assert out.metrics["longstraw_groups:sum"] == 1
    assert cosine(exact, full) >= 0.9999
    torch.testing.assert_close(exact, full, atol=1e-6, rtol=1e-4)
    with pytest.raises(ValueError, match="reuse_steps=0"):
        LongStraw(exact=True, reuse_steps=1)


def test_checkpointed_long_responses_give_the_same_gradient(backend):
    data = group(response=24)
    _, grad = gradient(backend, data, LongStraw(min_prefix=16))
    _, checkpointed = gradient(backend, data, LongStraw(min_prefix=16, checkpoint_from=8))
    torch.testing.assert_close(checkpointed, grad, atol=1e-6, rtol=1e-5)
    _, plain = gradient(backend, data, LongStraw(mode="off"))
    _, plain_checkpointed = gradient(backend, data, LongStraw(mode="off", checkpoint_from=8))
    torch.testing.assert_close(plain_checkpointed, plain, atol=1e-6, rtol=1e-5)
    causal_lm = backend.model.get_base_model()
    assert not causal_lm.is_gradient_checkpointing and not getattr(causal_lm, "_require_grads_hooks", [])  # nothing left on


def test_mixed_requests_share_what_they_can_and_keep_their_order(backend):
    """Two groups and a lone datum in one request: each group's prompt once, the loner plain; the
    outputs come back in request order and match the plain path's."""
    first, second, loner = group(seed=1), group(seed=2, size=3), group(seed=3, size=1)
    data = [first[0], second[0], loner[0], *first[1:], *second[1:]]
    out, _ = gradient(backend, data, LongStraw(min_prefix=16))
    plain, _ = gradient(backend, data, LongStraw(mode="off"))
    assert out.metrics["longstraw_groups:sum"] == 2
    for a, b in zip(out.loss_fn_outputs, plain.loss_fn_outputs):
        torch.testing.assert_close(a["logprobs"].to_torch(), b["logprobs"].to_torch(), atol=1e-5, rtol=1e-5)


def test_a_kept_prefix_is_reused_and_says_how_stale_it_is(backend):
    """With reuse_steps=1 the prompt's state computed at step 0 serves step 1 too (its prompt
    logprobs then differ from a fresh forward's), and step 2 computes it afresh."""
    policy, kept = backend.policies["moved"], LongStraw(min_prefix=16, reuse_steps=1)
    backend.prefixes.settings = kept
    data = group(seed=4)
    staleness, fresh = [], []
    for _ in range(3):
        backend.long_context = kept
        out = backend.forward_backward(policy, data, "importance_sampling", None)
        staleness.append(out.metrics["longstraw_prefix_staleness:max"])
        backend.long_context = LongStraw(mode="off")
        plain = backend.forward_backward(policy, data, "importance_sampling", None, backward=False)
        prompt = [o["logprobs"].to_torch()[: PROMPT - 2] for o in (out.loss_fn_outputs[0], plain.loss_fn_outputs[0])]
        fresh.append(torch.allclose(*prompt, atol=1e-5))
        backend.optim_step(policy, AdamParams(learning_rate=1e-2))
    backend.prefixes.kept.clear()
    assert staleness == [0.0, 1.0, 0.0]
    assert fresh == [True, False, True]


def test_a_call_that_fails_halfway_leaves_the_gradients_as_they_were(backend):
    """The plain datum and the group's first response are backpropagated before the second
    response fails (a target outside the vocabulary): nothing of the call stays accumulated."""
    policy = backend.policies["moved"]
    backend.long_context = LongStraw(min_prefix=16)
    first, second = group(seed=8, size=2)
    broken = second.model_copy(deep=True)
    broken.loss_fn_inputs["target_tokens"].data[-1] = 10**9
    backend.forward_backward(policy, group(seed=9, size=1), "importance_sampling", None)
    before = [p.grad.clone() for p in policy.parameters]
    with pytest.raises((IndexError, RuntimeError)):
        backend.forward_backward(policy, [group(seed=10, prompt=8, size=1)[0], first, broken], "importance_sampling", None)
    assert all(torch.equal(p.grad, b) for p, b in zip(policy.parameters, before))
    policy.optimizer.zero_grad(set_to_none=True)


def test_a_sparse_attention_base_always_takes_the_plain_path():
    """Its indexer picks the positions each query attends, which the shared K/V path would skip."""
    backend = LocalBackend("tiny:qwen3_dsa", torch.float32, long_context=LongStraw(mode="on"))
    policy = backend.create_policy("dsa", LoraConfig(rank=4, seed=0))
    out = backend.forward_backward(policy, group(), "importance_sampling", None)
    assert "longstraw_groups:sum" not in out.metrics


def test_the_tinker_api_trains_the_same_way_with_longstraw_on_the_server():
    """A backend decision: the same client calls over HTTP give the same loss and logprobs with
    LongStraw on and off, and both train (the gradients differ by the prompt's own K/V path)."""
    data = group(seed=5)
    results = {}
    for mode in ("on", "off"):
        with ServerThread(create_app(LocalService(long_context=LongStraw(mode)))) as url:
            client = ServiceClient(base_url=url).create_lora_training_client("tiny", rank=4, seed=7)
            out = client.forward_backward(data, "importance_sampling").result()
            client.optim_step(AdamParams(learning_rate=1e-2)).result()
            results[mode] = out, client.forward(data, "importance_sampling").result()
    (on, on_after), (off, off_after) = results["on"], results["off"]
    assert on.metrics["longstraw_groups:sum"] == 1 and "longstraw_groups:sum" not in off.metrics
    assert on.metrics["loss:sum"] == pytest.approx(off.metrics["loss:sum"], rel=1e-5)
    for a, b in zip(on.loss_fn_outputs, off.loss_fn_outputs):
        torch.testing.assert_close(a["logprobs"].to_torch(), b["logprobs"].to_torch(), atol=1e-5, rtol=1e-5)
    for before, after in ((on, on_after), (off, off_after)):
        assert after.metrics["loss:sum"] < before.metrics["loss:sum"]


def test_rl_calls_keep_a_group_with_a_long_prompt_together():
    """The RL loop cuts datums into calls by tokens with a graph; a group sharing a long prompt is
    one unit costing its prompt plus its longest response, so the learner computes the prompt once."""
    long_group, short = group(prompt=600, response=50, size=8, seed=6), group(prompt=20, size=4, seed=7)
    calls = _calls(short + long_group, tokens=700, loss_config={})
    assert [len(c) for c in calls] == [4, 8]
    assert calls[1] == long_group
    assert [len(c) for c in _calls(short, tokens=40, loss_config={})] == [1, 1, 1, 1]  # 27 tokens each
