"""The gate's statistics on per-case results: paired bootstrap intervals, the target's minimum
gain, non-inferiority guards, the latency ratio."""

import random

import pytest

from molt.evolve.contract import parse_contract
from molt.evolve.gate import PairScores, judge, paired_difference, paired_ratio

CONTRACT = parse_contract({
    "contract_version": "1", "name": "t", "test": {"confidence": 0.9, "resamples": 2000},
    "suites": [{"specialist": "agent", "cases": 90, "min_gain": 0.0}, {"specialist": "chat", "cases": 60, "max_drop": 0.05}],
})


def flips(n: int, rate: float, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [float(rng.random() < rate) for _ in range(n)]


def improved(before: list[float], fixed: int) -> list[float]:
    """The same answers with the first ``fixed`` failures turned into passes."""
    after, left = list(before), fixed
    for i, value in enumerate(after):
        if value == 0 and left:
            after[i], left = 1.0, left - 1
    return after


def scores(agent, chat, latency=None) -> PairScores:
    return PairScores({"agent": agent, "chat": chat}, [1.0] * 20, latency or [1.0] * 20)


def test_paired_intervals_are_tight_for_the_same_answers_and_cover_the_difference():
    before = flips(90, 0.4, 0)
    assert paired_difference(before, before, CONTRACT.test) == (0.0, 0.0, 0.0)
    mean, low, high = paired_difference(before, improved(before, 12), CONTRACT.test)
    assert mean == pytest.approx(12 / 90) and 0 < low < mean < high
    with pytest.raises(ValueError, match="same non-empty cases"):
        paired_difference([1.0], [1.0, 0.0], CONTRACT.test)
    ratio, low, high = paired_ratio([1.0] * 10, [2.0] * 10, CONTRACT.test)
    assert (ratio, low, high) == pytest.approx((2.0, 2.0, 2.0))


def test_a_real_gain_with_every_guard_held_is_promoted():
    agent, chat = flips(90, 0.4, 1), flips(60, 0.5, 2)
    verdict = judge(CONTRACT, "agent", scores(agent, chat), scores(improved(agent, 15), chat))
    assert verdict.promote and verdict.reason == "promote: every check passed"
    assert [c.name for c in verdict.checks] == ["target:agent", "guard:chat", "guard:routing", "guard:latency"]


def test_a_harmful_candidate_is_rejected():
    agent, chat = flips(90, 0.5, 3), flips(60, 0.5, 4)
    worse = [0.0 if i % 3 == 0 else v for i, v in enumerate(agent)]
    verdict = judge(CONTRACT, "agent", scores(agent, chat), scores(worse, chat))
    assert not verdict.promote and verdict.reason == "reject: target:agent failed"


def test_a_gain_too_small_to_tell_from_noise_is_rejected():
    agent, chat = flips(90, 0.4, 5), flips(60, 0.5, 6)
    verdict = judge(CONTRACT, "agent", scores(agent, chat), scores(improved(agent, 1), chat))
    target = verdict.checks[0]
    assert not verdict.promote and target.after > target.before and target.low <= 0


def test_a_target_gain_that_costs_another_specialist_beyond_its_margin_is_rejected():
    agent, chat = flips(90, 0.4, 7), flips(60, 0.7, 8)
    broken_chat = [0.0 if i % 4 == 0 else v for i, v in enumerate(chat)]
    verdict = judge(CONTRACT, "agent", scores(agent, chat), scores(improved(agent, 15), broken_chat))
    by_name = {c.name: c for c in verdict.checks}
    assert by_name["target:agent"].passed and not by_name["guard:chat"].passed
    assert verdict.reason == "reject: guard:chat failed"


def test_a_slower_candidate_fails_the_latency_guard():
    agent, chat = flips(90, 0.4, 9), flips(60, 0.5, 10)
    slow = [1.6 + 0.1 * (i % 3) for i in range(20)]
    verdict = judge(CONTRACT, "agent", scores(agent, chat), scores(improved(agent, 15), chat, slow))
    assert verdict.reason == "reject: guard:latency failed"
