"""R3 routing replay on a tiny sparse-MoE model (Qwen3-MoE, 2 layers of 4 experts, top-2) and a
tiny sparse-attention model (Qwen3 with a DSA-style indexer per layer, top-8 positions): the
engine records the routing of every token it samples; MinT's forward replays it, so the learner's
logprobs equal the sampler's even after the router's or indexer's weights moved; unreplayable
positions are masked from the loss. Run: pytest tests/mint/test_routing_replay.py"""

import pytest
import torch

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.mint.backend import LocalBackend
from molt.mint.losses import LossInputError
from molt.mint.routing import positions_replayable
from molt.mint.types import Datum, LoraConfig, ModelInput

PROMPT = list(range(100, 140))


@pytest.fixture(scope="module")
def sampled(tiny):
    """One sampled answer with the sampler's logprobs and routing."""
    engine = LLMEngine(EngineConfig(model="tiny:qwen3_moe", dtype="float32", max_model_len=256))
    params = SamplingParams(max_tokens=24, temperature=1.0, seed=3, logprobs=True, return_routing=True, ignore_eos=True)
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


def datum(sampled, experts=None, weights=None, advantages=None, positions=None) -> Datum:
    """The sampled answer as an RL Datum, with whichever routing is given."""
    answer, logprobs = sampled[:2]
    tokens = PROMPT + answer
    inputs = {
        "target_tokens": tokens[1:],
        "logprobs": [0.0] * (len(PROMPT) - 1) + logprobs,
        "advantages": advantages or [0.0] * (len(PROMPT) - 1) + [1.0] * len(answer),
    }
    routing = {"routed_experts": experts, "routed_expert_weights": weights, "sparse_attention_indices": positions}
    inputs |= {key: value for key, value in routing.items() if value is not None}
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


def test_recorded_gates_pass_the_learners_gradient(sampled, learner):
    """With the router unchanged, replaying recorded gate values (straight-through) gives the same
    gradient as letting the learner's router score the recorded experts: the recorded values
    take part in the forward only, the backward is the learner's own."""
    backend, policy = learner
    _, _, experts, weights = sampled

    def gradient(d: Datum) -> list[torch.Tensor]:
        backend.forward_backward(policy, [d], "importance_sampling", None)
        grads = [p.grad.clone() for p in policy.parameters]
        policy.optimizer.zero_grad(set_to_none=True)
        return grads

    recorded, learned = gradient(datum(sampled, experts, weights)), gradient(datum(sampled, experts))
    assert any(float(g.abs().sum()) > 0 for g in recorded)
    assert all(torch.allclose(a, b, atol=1e-6) for a, b in zip(recorded, learned))


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
    assert out.metrics["routing_unreplayed:mean"] == pytest.approx(2 / len(answer))


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


@pytest.fixture(scope="module")
def sampled_sparse(tiny):
    """One answer sampled on the sparse-attention base, with its attended positions."""
    engine = LLMEngine(EngineConfig(model="tiny:qwen3_dsa", dtype="float32", max_model_len=256))
    params = SamplingParams(max_tokens=24, temperature=1.0, seed=3, logprobs=True, return_routing=True, ignore_eos=True)
    [events] = engine.generate([PROMPT], params)
    return [t for e in events for t in e.token_ids], [lp for e in events for lp in e.logprobs], events[-1].sparse_indices


@pytest.fixture
def sparse_learner():
    backend = LocalBackend("tiny:qwen3_dsa", torch.float32)
    return backend, backend.create_policy("p", LoraConfig(rank=4, seed=0))


def sparse_datum(sampled, positions=None, advantages=None) -> Datum:
    return datum(sampled, advantages=advantages, positions=positions)


def test_the_engine_records_the_positions_each_token_attended(sampled_sparse):
    answer, _, positions = sampled_sparse
    assert positions.shape == (len(PROMPT) + len(answer) - 1, 2, 8)
    assert positions[0].tolist() == [[0] + [-1] * 7] * 2 and sorted(positions[3, 0].tolist()) == [-1] * 4 + [0, 1, 2, 3]
    assert positions_replayable(positions).all()  # every row: causal, min(8, t + 1) positions
    assert (positions[20:] < 20).any() and (positions[20:] >= 0).all()  # past top_k: a real choice among earlier tokens


def test_replay_gives_the_samplers_logprobs_under_a_moved_indexer(sampled_sparse, sparse_learner):
    """The indexer's weights move between sampling and training: without replay each query
    attends to other positions and the logprobs change; with the recorded positions they do not."""
    backend, _ = sparse_learner
    positions = sampled_sparse[2]
    assert answer_gap(sparse_learner, sampled_sparse, sparse_datum(sampled_sparse)) < 1e-4
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        for indexer in backend.indexers:
            indexer.wk.weight.data += 0.5 * torch.randn_like(indexer.wk.weight)
    assert answer_gap(sparse_learner, sampled_sparse, sparse_datum(sampled_sparse)) > 5e-3
    assert answer_gap(sparse_learner, sampled_sparse, sparse_datum(sampled_sparse, positions)) < 1e-4


def test_unreplayable_attention_rows_are_masked(sampled_sparse, sparse_learner):
    """A recorded position in the future of its query, or too few positions: masked and counted."""
    backend, policy = sparse_learner
    answer, _, positions = sampled_sparse
    first = len(PROMPT) - 1
    broken = positions.clone()
    broken[first + 1, 0, 0] = first + 9  # later than the query
    broken[first + 4, 1, 3] = -1  # one position short
    out = backend.forward_backward(policy, [sparse_datum(sampled_sparse, broken)], "importance_sampling", None, backward=False)
    advantages = [0.0] * first + [0.0 if i in (1, 4) else 1.0 for i in range(len(answer))]
    expected = backend.forward_backward(policy, [sparse_datum(sampled_sparse, positions, advantages)], "importance_sampling", None, backward=False)
    assert out.metrics["loss:sum"] == pytest.approx(expected.metrics["loss:sum"], abs=1e-4)
    assert out.metrics["routing_unreplayed:mean"] == pytest.approx(2 / len(answer))


def test_routing_of_a_kind_the_base_lacks_is_refused(sampled, sampled_sparse, learner, sparse_learner):
    with pytest.raises(LossInputError, match="no sparse-attention layers"):
        learner[0].forward_backward(learner[1], [sparse_datum(sampled_sparse, sampled_sparse[2])], "importance_sampling", None)
    with pytest.raises(LossInputError, match="no MoE layers"):
        sparse_learner[0].forward_backward(sparse_learner[1], [datum(sampled, sampled[2])], "importance_sampling", None)
