"""``molt bench rl`` runs one GRPO workload on both sides: the same settings but for the parts
that are each side's implementation (printed), the same problems in each step, and the same
clocks. Run: pytest tests/bench/test_rl.py

The toy run cannot pass by chance: each side reports the problems its step sampled (molt from its
loop's metrics, TRL from the reward function's calls), and they match step for step only if TRL's
dataset order, batch and group size are molt's."""

import io
from dataclasses import asdict

import pytest
from rich.console import Console

from molt.bench.rl import RLBenchConfig, run, side_settings, workload
from molt.mint.service import LocalService

IMPLEMENTATION = {"loss", "sampler", "constant_groups"}


def test_both_sides_get_the_same_workload_settings():
    config = RLBenchConfig(dtype="float32", rank=8, batch=3, group_size=5, learning_rate=3e-4)
    molt, trl = (asdict(s) for s in side_settings(config).values())
    assert {k: v for k, v in molt.items() if k not in IMPLEMENTATION} == {k: v for k, v in trl.items() if k not in IMPLEMENTATION}
    assert all(molt[k] != trl[k] for k in IMPLEMENTATION)  # printed beside the figures
    assert molt["dtype"] == str(LocalService("float32").dtype).removeprefix("torch.")
    assert (molt["rank"], molt["alpha"], molt["problems_per_step"], molt["group_size"]) == (8, 8, 3, 5)


def test_multi_turn_and_unknown_environments_are_refused():
    with pytest.raises(ValueError, match="single-turn"):
        workload(RLBenchConfig(env="order_refund"))
    with pytest.raises(ValueError, match="unknown environment 'chess'"):
        workload(RLBenchConfig(env="chess"))


def test_a_toy_run_gives_both_sides_the_same_steps(tiny):
    config = RLBenchConfig(model="tiny", steps=1, warmup_steps=1, batch=2, group_size=2, dtype="float32")
    out = io.StringIO()
    result = run(config, Console(file=out, width=200))
    molt, trl = result["sides"]["molt"], result["sides"]["trl"]
    assert [s["problems"] for s in molt["steps"]] == [s["problems"] for s in trl["steps"]]
    assert [len(s["problems"]) for s in molt["steps"]] == [2, 2]
    assert molt["timed_steps"] == trl["timed_steps"] == 1
    for side in (molt, trl):
        assert all(0 < s["rollout_tokens"] <= 2 * 2 * 128 and s["rollout_seconds"] < s["seconds"] for s in side["steps"])
    assert trl["steps"][-1]["trained_tokens"] > 0  # TRL trains every group
    assert result["trl_prompt_tokens_identical"] == 1.0  # TRL re-tokenizes molt's rendered prompts to the same tokens
    assert result["step_speedup"] == pytest.approx(trl["seconds_per_step"] / molt["seconds_per_step"])
    assert "faster per step" in out.getvalue()
