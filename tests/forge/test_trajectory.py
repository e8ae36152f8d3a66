"""Trajectories become MinT Datums token for token as the renderer writes the conversation, and
group advantages drop groups that teach nothing. Run: pytest tests/forge/test_trajectory.py"""

import pytest

from molt.forge.advantages import group_advantages, informative_groups
from molt.forge.trajectory import Trajectory, Transition, trajectory_datums
from molt.models.renderer import get_renderer

TOOLS = [{"type": "function", "function": {"name": "find_order", "description": "Find an order id by item", "parameters": {"type": "object", "properties": {"item": {"type": "string"}}}}}]
CALL = {"id": "c1", "type": "function", "function": {"name": "find_order", "arguments": '{"item": "lamp"}'}}
CONVERSATION = [
    {"role": "user", "content": "Refund my lamp order."},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": '{"order_id": "A-17"}'},
    {"role": "assistant", "content": "Order A-17 is refunded."},
]


def sampled(renderer, before: list[dict], message: dict) -> list[int]:
    """The tokens a policy writes for ``message``: what follows the generation prompt, up to and
    including the first stop token (where the sampler stops)."""
    rest = renderer.render([*before, message], TOOLS)[len(renderer.generation_prompt(before, TOOLS)) :]
    end = next(i for i, t in enumerate(rest) if t in renderer.stop_token_ids)
    return rest[: end + 1]


def test_a_multi_turn_trajectory_is_one_datum_exactly_as_rendered(tiny):
    renderer = get_renderer(tiny.tokenizer)
    turns = []
    for i in (1, 3):
        action = sampled(renderer, CONVERSATION[:i], CONVERSATION[i])
        turns.append(Transition(renderer.generation_prompt(CONVERSATION[:i], TOOLS), action, [-0.5] * len(action)))
    [datum] = trajectory_datums(Trajectory(turns, final_reward=1.0), advantage=0.75)
    tokens = datum.model_input.to_ints() + datum.loss_fn_inputs["target_tokens"].tolist()[-1:]
    example = renderer.supervised_example(CONVERSATION, TOOLS)
    end = len(tokens)
    assert tokens == example.tokens[:end]  # the whole conversation, up to the last end token
    acted = [w == 1.0 for w in example.weights[1:end]]  # the assistant turns' bodies and end tokens
    assert [a != 0 for a in datum.loss_fn_inputs["advantages"].tolist()] == acted
    assert set(datum.loss_fn_inputs["advantages"].tolist()) == {0.0, 0.75}
    assert [lp != 0 for lp in datum.loss_fn_inputs["logprobs"].tolist()] == acted


def test_a_rewritten_context_starts_a_new_datum():
    first = Transition([1, 2, 3], [4, 5], [-0.1, -0.2])
    extends = Transition([1, 2, 3, 4, 5, 6], [7], [-0.3])
    rewritten = Transition([9, 6], [8], [-0.4])  # e.g. older turns collapsed into a summary
    datums = trajectory_datums(Trajectory([first, extends, rewritten]), advantage=-1.0)
    assert [d.model_input.to_ints() for d in datums] == [[1, 2, 3, 4, 5, 6], [9, 6]]
    assert datums[0].loss_fn_inputs["target_tokens"].tolist() == [2, 3, 4, 5, 6, 7]
    assert datums[0].loss_fn_inputs["advantages"].tolist() == [0, 0, -1, -1, 0, -1]
    assert datums[0].loss_fn_inputs["logprobs"].tolist() == pytest.approx([0, 0, -0.1, -0.2, 0, -0.3])
    assert datums[1].loss_fn_inputs["target_tokens"].tolist() == [6, 8] and datums[1].loss_fn_inputs["advantages"].tolist() == [0, -1]


def test_a_datum_carries_each_positions_routing_from_when_it_was_first_fed():
    """MoE bases: each turn's sample routes its whole context. In the Datum of a run of turns, the
    positions the first turn fed keep its rows (its action was sampled under them); the second
    turn adds the positions after them (one row per model_input position: layers × top_k)."""
    route = lambda n, e: {"routed_experts": [[[e, e + 1]]] * n, "routed_expert_weights": [[[0.6, 0.4]]] * n}
    first = Transition([1, 2, 3], [4, 5], [-0.1, -0.2], routing=route(4, 0))
    extends = Transition([1, 2, 3, 4, 5, 6], [7], [-0.3], routing=route(6, 2))
    [datum] = trajectory_datums(Trajectory([first, extends]), advantage=1.0)
    assert datum.loss_fn_inputs["routed_experts"].to_torch().shape == (6, 1, 2)
    assert datum.loss_fn_inputs["routed_experts"].tolist() == [[[0, 1]]] * 4 + [[[2, 3]]] * 2
    assert datum.loss_fn_inputs["routed_expert_weights"].to_torch().flatten().tolist() == pytest.approx([0.6, 0.4] * 6)
    short = Transition([1, 2, 3], [4, 5], [-0.1, -0.2], routing=route(3, 0))
    with pytest.raises(ValueError, match="covers 3 positions; the Datum has 4"):
        trajectory_datums(Trajectory([short]), advantage=1.0)


def test_transitions_refuse_mismatched_logprobs():
    with pytest.raises(ValueError, match="2 tokens has 1 logprobs"):
        Transition([1], [2, 3], [-0.1])
    with pytest.raises(ValueError, match="at least one action token"):
        Transition([1], [], [])


def test_group_advantages_are_relative_to_the_group():
    assert group_advantages([1.0, 0.0, 0.0, 1.0]) == [0.5, -0.5, -0.5, 0.5]
    assert group_advantages([1.0, 0.0, 0.0, 1.0], normalize=True) == pytest.approx([1.0, -1.0, -1.0, 1.0], abs=1e-5)
    assert group_advantages([0.3, 0.3]) == [0.0, 0.0] and group_advantages([]) == []


def test_groups_with_one_reward_are_dropped():
    def group(*rewards):
        return [Trajectory([Transition([1], [2], [-0.1])], final_reward=r) for r in rewards]

    kept = informative_groups([group(1, 1, 1), group(0, 1, 0), group(0, 0), group(0.5, 0.25)])
    assert [[t.reward for t in g] for g in kept] == [[0, 1, 0], [0.5, 0.25]]
