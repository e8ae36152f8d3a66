"""``molt bench train`` compares like with like: both sides get the same settings (a pure
function of the bench config), train on identical batches, and time the same boundaries.
Run: pytest tests/bench/test_train.py

Pins a bench where TRL loaded float32 weights while molt's base was bf16, and TRL's whole
``trainer.train()`` was timed against molt's summed steps. The toy run cannot pass by chance: each
side reads its dtype, LoRA and optimizer back from its own trainer, and the per-step token counts
(TRL's from its ``num_input_tokens_seen``) match only if both saw the same examples in each step.
"""

import io

import pytest
from rich.console import Console

from molt.bench.train import TARGETS, TrainBenchConfig, run, side_settings, training_steps
from molt.mint.service import LocalService

CONFIGS = [
    TrainBenchConfig(),
    TrainBenchConfig(dtype="float32", rank=8, batch_size=3, max_length=128),
    TrainBenchConfig(dtype="bfloat16", warmup_steps=2, learning_rate=1e-3),
]


@pytest.mark.parametrize("config", CONFIGS, ids=["default", "float32", "bfloat16"])
def test_both_sides_get_the_same_settings(config):
    settings = side_settings(config)
    assert settings["molt"] == settings["trl"]
    s = settings["molt"]
    assert s.dtype == str(LocalService(config.dtype).dtype).removeprefix("torch.")  # what molt's own service trains in
    assert (s.rank, s.alpha, s.targets) == (config.rank, config.rank, TARGETS)
    assert (s.examples_per_step, s.max_length, s.warmup_steps) == (config.batch_size, config.max_length, config.warmup_steps) and s.warmup_steps >= 1


def test_trl_packing_is_reported_as_a_different_setting():
    settings = side_settings(TrainBenchConfig(trl_packing=True))
    assert settings["molt"] != settings["trl"] and settings["trl"].examples_per_step is None


def test_steps_hold_batch_size_examples_cut_to_max_length():
    config = TrainBenchConfig(model="tiny", examples=23, batch_size=4, max_length=96)
    steps = training_steps(config)
    assert [len(s) for s in steps] == [4] * 5 + [3]  # a short step only at the end, as a sequential sampler cuts it
    assert all(len(r.tokens) == len(r.weights) <= 96 and any(r.weights) for step in steps for r in step)
    assert training_steps(config) == steps  # a pure function of the config


def test_a_toy_run_trains_both_sides_alike():
    config = TrainBenchConfig(model="tiny", examples=6, batch_size=3, dtype="bfloat16")
    result = run(config, Console(file=io.StringIO()))
    molt, trl = result["sides"]["molt"], result["sides"]["trl"]
    assert result["like_for_like"] and molt["settings"] == trl["settings"] and molt["observed"] == trl["observed"]
    assert molt["observed"]["dtype"] == "bfloat16" and molt["observed"]["lora_dtype"] == "float32"
    assert molt["observed"]["rank"] == 16 and molt["observed"]["targets"] == sorted(TARGETS) and molt["observed"]["examples_per_step"] == 3
    assert molt["step_tokens"] == trl["step_tokens"] and len(molt["step_tokens"]) == 2  # the same batches, in the same order
    assert molt["timed_steps"] == trl["timed_steps"] == 1 and molt["timed_tokens"] == trl["timed_tokens"] == molt["step_tokens"][1]
    assert molt["timed_seconds"] == molt["step_seconds"][1] and trl["timed_seconds"] == trl["step_seconds"][1]  # the warm-up step is not timed
    assert result["speedup"] == pytest.approx(molt["tokens_per_s"] / trl["tokens_per_s"])
