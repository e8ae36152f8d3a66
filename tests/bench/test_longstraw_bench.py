"""``molt bench longstraw`` at toy size on the tiny model: every path and point runs in its own
process, the figures come back, ratios and the PNG are written, and a point predicted too slow
is skipped with its reason. Run: pytest tests/bench/test_longstraw_bench.py"""

import io
import json

from rich.console import Console

from molt.bench.longstraw import PATHS, LongStrawBenchConfig, _skip_reason, run


def test_a_toy_run_measures_every_path_and_point(tmp_path):
    config = LongStrawBenchConfig(model="tiny", groups=(2,), lengths=(24,), response=4, rank=4, dtype="float32", gradient_length=16, plot=str(tmp_path / "longstraw.png"))
    out = io.StringIO()
    result = run(config, Console(file=out, width=200))
    json.dumps(result)  # --json prints it as is
    assert {(p["path"], p["group"]) for p in result["points"]} == {(path, 2) for path in PATHS}
    for point in result["points"]:
        assert point["seconds"] > 0 and point["peak_gb"] >= point["loaded_gb"] > 0
        assert point["longstraw_groups"] == (0 if point["path"] == "plain" else 1)
    gradients = result["gradients"]
    assert gradients["vs_detached_prompt"]["cosine"] >= 0.9999 and gradients["exact_vs_full_backprop"]["cosine"] >= 0.9999
    assert gradients["vs_full_backprop"]["cosine"] < 0.9999
    assert (tmp_path / "longstraw.png").stat().st_size > 0
    assert "plain ÷ LongStraw" in out.getvalue() and "exact mode vs full backprop" in out.getvalue()


def test_a_point_predicted_over_the_time_or_memory_budget_is_skipped():
    config = LongStrawBenchConfig(max_step_s=100, memory_gb=4)
    measured = [{"graph_tokens": 1000, "seconds": 50.0, "loaded_gb": 1.0, "step_gb": 1.0}]
    assert _skip_reason(measured, config, 1500) is None
    assert _skip_reason(measured, config, 2500) == "predicted 125 s > 100 s"
    assert _skip_reason([{**measured[0], "seconds": 10.0}], config, 4000) == "predicted 5.0 GB > 4 GB"
