"""`molt bench replicas` on the tiny model and a real PostgreSQL server: every setting answers
the same turns, and the figures it prints are the ones it returns.
Run: pytest tests/bench/test_replicas_bench.py"""

import io

import pytest
from rich.console import Console

from molt.bench.replicas import SETTINGS, ReplicaBenchConfig, routes, run
from scripted_hcp import tiny_hcp


def test_a_short_run_measures_every_setting(postgres):
    out = io.StringIO()
    result = run(tiny_hcp("http://unused/v1"), ReplicaBenchConfig(rounds=1, max_tokens=4, db=postgres), Console(file=out, width=150))
    assert result["turns_per_setting"] == 8  # one round: two conversations of four turns
    assert set(result["median_turn_ms"]) == set(SETTINGS) and all(v > 0 for v in result["median_turn_ms"].values())
    ratio = result["median_turn_ms"]["two replicas, hopping"] / result["median_turn_ms"]["two replicas, staying"]
    assert result["second_replica_vs_first"] == pytest.approx(ratio)
    assert f"×{result['second_replica_vs_first']:.3f}" in out.getvalue() and "two replicas, hopping" in out.getvalue()


def test_hopping_conversations_alternate_and_staying_ones_do_not():
    assert routes("two replicas, hopping", ["a", "b"]) == [["a", "b"], ["b", "a"]]
    assert routes("two replicas, staying", ["a", "b"]) == [["a"], ["b"]]
    assert routes("one proxy", ["a"]) == [["a"], ["a"]]


def test_a_database_that_is_not_postgresql_is_refused():
    with pytest.raises(ValueError, match="must be a PostgreSQL server URL"):
        run(tiny_hcp("http://unused/v1"), ReplicaBenchConfig(rounds=1, db="sqlite:///x.db"), Console(file=io.StringIO()))
