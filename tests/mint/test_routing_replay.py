"""R3 routing replay on a tiny sparse-MoE model (Qwen3-MoE, 2 layers of 4 experts, top-2): the
engine records the routing of every token it samples; MinT's forward replays it, so the learner's
logprobs equal the sampler's even after the router's weights moved; unreplayable positions are
masked from the loss. Run: pytest tests/mint/test_routing_replay.py"""

import pytest
import torch

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.mint.backend import LocalBackend
from molt.mint.losses import LossInputError
from molt.mint.types import Datum, LoraConfig, ModelInput

PROMPT = list(range(100, 140))


@pytest.fixture(scope="module")
def sampled(tiny):
    """One sampled answer with the sampler's logprobs and routing."""
    engine = LLMEngine(EngineConfig(model="tiny:qwen3_moe", dtype="float32", max_model_len=256))
    params = SamplingParams(max_tokens=24, temperature=1.0, seed=3, logprobs=True, return_routed_experts=True, ignore_eos=True)
    [events] = engine.generate([PROMPT], params)
    answer = [t for e in events for t in e.token_ids]
    return answer, [lp for e in events for lp in e.logprobs], events[-1].routed_experts.long(), events[-1].routed_weights


@pytest.fixture
def learner():
    """A MinT backend on its own copy of the same base, and a fresh policy (LoRA B = 0: the base)."""
    backend = LocalBackend("tiny:qwen3_moe", torch.float32)
    return backend, backend.create_policy("p", LoraConfig(rank=4, seed=0))


def perturb_routers(backend: LocalBackend, scale: float = 0.05) -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for router in backend.routers:
            router.weight.data += scale * torch.randn_like(router.weight)


def datum(sampled, experts=None, weights=None, advantages=None) -> Datum:
    answer, logprobs, _, _ = sampled
    tokens = PROMPT + answer
    inputs = {
        "target_tokens": tokens[1:],
        "logprobs": [0.0] * (len(PROMPT) - 1) + logprobs,
        "advantages": advantages or [0.0] * (len(PROMPT) - 1) + [1.0] * len(answer),
    }
    if experts is not None:
        inputs["routed_experts"] = experts
    if weights is not None:
        inputs["routed_expert_weights"] = weights
    return Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs=inputs)


def answer_gap(learner, sampled, d: Datum) -> float:
    """Largest |learner − sampler| logprob over the answer's tokens."""
    backend, policy = learner
    out = backend.forward_backward(policy, [d], "importance_sampling", None, backward=False)
    learned = out.loss_fn_outputs[0]["logprobs"].to_torch()[len(PROMPT) - 1 :]
    return float((learned - torch.tensor(sampled[1])).abs().max())


def test_the_engine_records_every_fed_tokens_routing(sampled):
    answer, _, experts, weights = sampled
    assert experts.shape == (len(PROMPT) + len(answer) - 1, 2, 2)  # prompt + answer − 1 positions, 2 MoE layers, top-2
    assert ((experts >= 0) & (experts < 4)).all() and (experts[..., 0] != experts[..., 1]).all()
    assert torch.allclose(weights.sum(-1), torch.ones(weights.shape[:2]))  # norm_topk_prob: a token's gates sum to 1


def test_replay_gives_the_samplers_logprobs_under_a_moved_router(sampled, learner):
    """The router's weights move between sampling and training: without replay, flipped experts
    change the answer's logprobs; with the recorded experts and gate weights, they are the sampler's."""
    _, _, experts, weights = sampled
    assert answer_gap(learner, sampled, datum(sampled)) < 1e-4  # same weights on both sides: same routing anyway
    perturb_routers(learner[0])
    assert answer_gap(learner, sampled, datum(sampled)) > 5e-3
    assert answer_gap(learner, sampled, datum(sampled, experts, weights)) < 1e-4


def test_replaying_expert_ids_alone_uses_the_learners_gates(sampled, learner):
    """vLLM returns only the ids: the learner's router then scores the recorded experts. With the
    router unchanged that is exactly the sampler's computation."""
    _, _, experts, _ = sampled
    assert answer_gap(learner, sampled, datum(sampled, experts)) < 1e-4


def test_replay_passes_gradients_to_the_policy(sampled, learner):
    backend, policy = learner
    _, _, experts, weights = sampled
    perturb_routers(backend)
    backend.forward_backward(policy, [datum(sampled, experts, weights)], "importance_sampling", None)
    grads = [p.grad for p in policy.parameters if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)


def test_unreplayable_positions_are_masked_from_the_loss(sampled, learner):
    """A missing route (-1) or an expert the base lacks: that position keeps the learner's own
    routing and the token it predicts gets no weight; the share is reported."""
    backend, policy = learner
    answer, _, experts, weights = sampled
    first = len(PROMPT) - 1  # the position predicting the answer's first token
    broken = experts.clone()
    broken[first + 2, 0, 0] = -1
    broken[first + 5, 1, 1] = 99
    out = backend.forward_backward(policy, [datum(sampled, broken, weights)], "importance_sampling", None, backward=False)
    advantages = [0.0] * first + [0.0 if i in (2, 5) else 1.0 for i in range(len(answer))]
    expected = backend.forward_backward(policy, [datum(sampled, experts, weights, advantages)], "importance_sampling", None, backward=False)
    assert out.metrics["loss:sum"] == pytest.approx(expected.metrics["loss:sum"], abs=1e-4)
    assert out.metrics["routing_unreplayed:frac"] == pytest.approx(2 / len(answer))


def test_bad_routing_inputs_are_refused(sampled, learner):
    backend, policy = learner
    _, _, experts, weights = sampled
    with pytest.raises(LossInputError, match="expected"):
        backend.forward_backward(policy, [datum(sampled, experts[:-1])], "importance_sampling", None)
    with pytest.raises(LossInputError, match="needs loss_fn_inputs\\['routed_experts'\\]"):
        backend.forward_backward(policy, [datum(sampled, None, weights)], "importance_sampling", None)
    with pytest.raises(LossInputError, match="every datum"):
        backend.forward_backward(policy, [datum(sampled, experts), datum(sampled)], "importance_sampling", None)


def test_a_dense_base_refuses_routing(tiny, sampled):
    backend = LocalBackend("tiny", torch.float32)
    policy = backend.create_policy("p", LoraConfig(rank=4, seed=0))
    with pytest.raises(LossInputError, match="no MoE layers"):
        backend.forward_backward(policy, [datum(sampled, sampled[2])], "importance_sampling", None)


def test_moe_policies_leave_the_experts_alone(learner):
    """The engine serves experts without LoRA, so MinT trains attention and the unembedding only."""
    _, policy = learner
    assert policy.parameters and all("experts" not in name for name in _names(learner))


def _names(learner) -> list[str]:
    backend, policy = learner
    ids = {id(p) for p in policy.parameters}
    return [name for name, p in backend.model.named_parameters() if id(p) in ids]
