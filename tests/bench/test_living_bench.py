"""``molt bench living`` end to end on the tiny model: each system runs the scenarios (picked by
variant, a memory and a stale-memory one among them) through the engine or the proxy and gets a
total per scenario, and a system the HCP cannot serve is refused up front. Run:
pytest tests/bench/test_living_bench.py"""

import pytest
from rich.console import Console

from molt.bench.living.bench import LivingBenchConfig, run
from scripted_hcp import tiny_hcp


def test_a_toy_run_scores_every_scenario_in_every_system():
    systems = ("base", "routed", "routed + memory")
    variants = ("corrupted_tool", "asymmetry", "memory", "memory_stale")
    result = run(tiny_hcp("http://unused"), LivingBenchConfig(max_tokens=16, concurrency=2, limit=4, systems=systems, variants=variants), Console(quiet=True))
    assert result["scenarios"] == 4 and result["multi_session"] == 2 and list(result["systems"]) == list(systems)
    assert [row["variant"] for row in result["per_scenario"]] == list(variants)
    for name in systems:
        figures = result["systems"][name]
        assert 0.0 <= figures["total"] <= 1.0 and figures["turns"] >= 1
        assert set(figures["noise"]) == {"user_noise", "world_change", "corrupted_tool", "asymmetry"}
    assert [row["id"] for row in result["per_scenario"]] == sorted({row["id"] for row in result["per_scenario"]}, key=[r["id"] for r in result["per_scenario"]].index)
    assert all(set(systems) <= set(row) for row in result["per_scenario"])


def test_the_agent_system_needs_a_trained_agent():
    with pytest.raises(ValueError, match="no trained agent specialist"):
        run(tiny_hcp("http://unused"), LivingBenchConfig(limit=1), Console(quiet=True))
