"""The gate on real answers of the embedded model: a candidate trained on corrupted labels is
rejected, and so is one that gains on the target while another specialist regresses beyond its
margin. Pairs are built from the session's bootstrapped specialists (chat, and an agent trained
on five functions); the corrupted ones are trained beside the suite (``tests/session_bootstrap.py``).
They answer small suites of the contract's kind, one case at a time; the harmed pair's results
are measured once and reused."""

import pytest

from molt.evolve.contract import parse_contract
from molt.evolve.evaluate import evaluate_pairs
from molt.evolve.gate import judge
from molt.registry import Registry
from molt.registry.pairs import pair_hcp

# the trained agent's five functions show up in the wording split; the held-out split's are all new
# latency is not under test here (ten routed turns, a loose bound); the suites and routing are
CONTRACT = parse_contract({
    "contract_version": "1", "name": "trained-pairs", "routing": {"cases": 5}, "latency": {"max_increase": 2.0},
    "suites": [{"specialist": "agent", "split": "wording", "cases": 18, "seed": 7}, {"specialist": "chat", "split": "wording", "cases": 10, "seed": 7, "max_drop": 0.05}],
})


@pytest.fixture(scope="module")
def registry(bootstrapped):
    return Registry()


@pytest.fixture(scope="module")
def harmed(registry, bootstrapped, corrupted):
    """The bootstrapped pair with its agent trained on corrupted labels, and both pairs' results."""
    candidate = corrupted["agent"]
    before, after = evaluate_pairs(CONTRACT, pair_hcp(registry, bootstrapped.pair.id), pair_hcp(registry, candidate))
    return candidate, before, after


def test_a_candidate_trained_on_corrupted_labels_is_rejected(harmed):
    _, before, after = harmed
    verdict = judge(CONTRACT, "agent", before, after)
    target = verdict.checks[0]
    print(verdict.to_json())
    assert target.before > 0.1, "the incumbent agent solves part of the suite, so harm can show"
    assert not verdict.promote and not target.passed and target.after < target.before
    assert after.reused == {"chat": "same adapter and prompt as the incumbent: answered once"}
    assert before.batched == after.batched == ["chat"]  # shared answers: many at a time


def test_a_target_gain_bought_with_a_chat_regression_is_rejected(registry, harmed, corrupted):
    """Incumbent: the harmed pair (its agent never right). Candidate: the trained agent back, with
    a chat trained on corrupted labels. Every case the trained agent gets right is a gain."""
    harmed_pair, _, harmed_results = harmed
    candidate = corrupted["chat"]
    before, after = evaluate_pairs(CONTRACT, pair_hcp(registry, harmed_pair), pair_hcp(registry, candidate), known=harmed_results)
    assert before.suites["agent"] == harmed_results.suites["agent"] and before.batched == after.batched == []
    assert after.reused == {}  # chat differs now: the incumbent's chat, answered many at a time before, is answered again one at a time
    verdict = judge(CONTRACT, "agent", before, after)
    print(verdict.to_json())
    checks = {c.name: c for c in verdict.checks}
    assert checks["target:agent"].passed, "the trained agent beats the harmed one beyond noise"
    assert not checks["guard:chat"].passed and checks["guard:chat"].after < checks["guard:chat"].before
    assert not verdict.promote and verdict.reason == "reject: guard:chat failed"
