"""`molt rl` from the command line: a short run on a tiny model writes its run folder; bad
starting points get one clear line. Run: pytest tests/forge/test_rl_cli.py"""

import json

import pytest

from test_cli import molt


@pytest.mark.parametrize("model", ["tiny", "tiny:qwen3_moe"])
def test_a_short_run_writes_its_folder(tmp_path, model):
    """On a sparse-MoE base, routing replay is on by default."""
    out = tmp_path / "run"
    result = molt("rl", "--model", model, "--start", "fresh", "--steps", "2", "--batch", "2", "--group-size", "2", "--train-size", "4", "--heldout-size", "2", "--eval-every", "1", "--out", str(out))
    assert result.returncode == 0
    assert [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [0, 1]
    assert json.loads((out / "summary.json").read_text())["steps"] == 2 and (out / "curves.png").is_file()
    assert "step 2/2" in result.stderr and "heldout_after" in result.stdout
    assert json.loads((out / "config.json").read_text())["routing_replay"] is (model == "tiny:qwen3_moe")


def test_bad_starting_points_and_losses_are_one_clear_line(tmp_path):
    result = molt("rl", "--model", "tiny", "--start", "molt://nowhere/rev", "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "no adapter folder" in result.stderr
    result = molt("rl", "--model", "tiny", "--start", "fresh", "--loss", "ppo", "--tis-cap", "2")
    assert result.returncode == 2 and "has no config tis_cap" in result.stderr
    result = molt("rl", "--model", "tiny", "--start", "fresh", "--routing-replay")
    assert result.returncode == 2 and "needs a sparse-MoE or sparse-attention base; 'tiny' routes nothing" in result.stderr
    result = molt("rl", "--env", "chess", "--start", "fresh")
    assert result.returncode == 2 and "unknown environment 'chess'" in result.stderr


def test_eval_only_scores_the_start_and_trains_nothing(tmp_path):
    out = tmp_path / "run"
    result = molt("rl", "--model", "tiny", "--start", "fresh", "--eval-only", "--heldout-size", "3", "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert "held-out reward" in result.stdout and "no_call_recall" in result.stdout and "exact_match" in result.stdout
    assert not out.exists()
