"""The SFT recipe on the tiny model: data errors, refused settings, packing and weights, exact
resume, HTTP training, and the CLI.
Run: pytest tests/train/test_sft.py"""

import json
from pathlib import Path

import pytest
import torch
from pydantic import ValidationError
from safetensors.torch import load_file
from typer.testing import CliRunner

from molt.cli import app
from molt.http_server import ServerThread
from molt.mint import ServiceClient
from molt.mint.checkpoints import resolve
from molt.mint.server import create_app
from molt.mint.service import LocalService
from molt.train.data import DatasetError, read_chat_jsonl
from molt.train.sft import ResumeError, SFTConfig, prepare, run_sft, schedule

CHAT = {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}, {"role": "assistant", "content": "Teal."}]}


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


@pytest.fixture
def dataset(tmp_path) -> Path:
    rows = [{"messages": [{"role": "user", "content": f"Say the number {i}."}, {"role": "assistant", "content": f"The number is {i}, as asked."}]} for i in range(12)]
    return write_jsonl(tmp_path / "numbers.jsonl", rows)


@pytest.mark.parametrize("rows,message", [
    ([CHAT, '{"messages": [}'], r"bad\.jsonl:2: malformed JSON"),
    ([CHAT, CHAT, {"messages": [{"content": "hi"}]}], r"bad\.jsonl:3: message 0 has no \"role\""),
    ([{"messages": [{"role": "wizard", "content": "hi"}]}], r"bad\.jsonl:1: message 0: role: Input should be 'system'"),
    ([{"messages": [{"role": "user", "content": "hi"}]}], r"bad\.jsonl:1: no assistant message"),
    ([{"prompt": "hi"}], r"bad\.jsonl:1: expected an object with a non-empty \"messages\" list"),
    ([], r"bad\.jsonl: empty dataset"),
])
def test_bad_data_names_file_and_line(tmp_path, rows, message):
    with pytest.raises(DatasetError, match=message):
        read_chat_jsonl(write_jsonl(tmp_path / "bad.jsonl", rows))


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        read_chat_jsonl(tmp_path / "absent.jsonl")
    (tmp_path / "bin.jsonl").write_bytes(json.dumps(CHAT).encode() + b"\n\xff\xfe\n")
    with pytest.raises(DatasetError, match=r"bin\.jsonl:2: not UTF-8"):
        read_chat_jsonl(tmp_path / "bin.jsonl")


def test_only_assistant_tokens_weigh_and_steps_pack_whole_examples(dataset, tiny):
    config = SFTConfig(adapter="numbers", data=dataset, batch_tokens=64, eval_fraction=0.25)
    train, held_out, dropped = prepare(read_chat_jsonl(dataset), config, tiny.tokenizer)
    assert (len(train), len(held_out), dropped) == (9, 3, 0)
    for example in train:
        targets = example.datum.loss_fn_inputs["target_tokens"].tolist()
        weights = example.datum.loss_fn_inputs["weights"].tolist()
        text = tiny.tokenizer.decode([t for t, w in zip(targets, weights) if w])
        assert text.startswith("The number is ") and text.endswith(", as asked.<|im_end|>")
    steps = schedule(train, config)
    assert sorted(id(e) for s in steps for e in s) == sorted(id(e) for e in train)
    assert all(sum(e.tokens for e in s) <= 64 for s in steps) and len(steps) > 1
    assert schedule(train, config) == steps  # the order is a function of the seed


def test_settings_are_refused_before_any_work(dataset):
    for bad in ({"rank": 0}, {"learning_rate": 0.0}, {"learning_rate": -1e-4}, {"adapter": "../x"}, {"eval_fraction": 1.0}):
        with pytest.raises(ValidationError):
            SFTConfig(**{"adapter": "a", "data": dataset, **bad})
    result = CliRunner().invoke(app, ["train", "sft", "--data", str(dataset), "--adapter", "a", "--rank", "0", "--lr", "-1"])
    assert result.exit_code == 2
    assert "--rank: Input should be greater than or equal to 1" in result.output and "--lr: Input should be greater than 0" in result.output


def adapter_weights(revision: str) -> dict[str, torch.Tensor]:
    return load_file(resolve(revision) / "adapter_model.safetensors")


def test_resume_reproduces_the_uninterrupted_run(dataset):
    """Interrupted after step 3 (checkpoint at step 2), then resumed: the remaining losses and the
    final adapter equal those of the run that never stopped (float32)."""
    service = ServiceClient(dtype="float32")
    settings = dict(data=dataset, base_model="tiny", rank=4, learning_rate=1e-2, batch_tokens=48, epochs=2, save_every=2, eval_every=2)
    whole = run_sft(SFTConfig(adapter="whole", **settings), service)
    assert whole.steps >= 5

    def stop_after_3(report):
        if report.step == 3:
            raise KeyboardInterrupt

    config = SFTConfig(adapter="cut", **settings)
    with pytest.raises(KeyboardInterrupt):
        run_sft(config, service, on_step=stop_after_3)
    with pytest.raises(ResumeError, match="pass --resume"):
        run_sft(config, service)
    with pytest.raises(ResumeError, match="other settings"):
        run_sft(SFTConfig(adapter="cut", **{**settings, "learning_rate": 2e-2}), service, resume=True)
    resumed = run_sft(config, service, resume=True)
    assert resumed.losses == whole.losses and resumed.eval_loss_after == whole.eval_loss_after
    a, b = adapter_weights(whole.revision), adapter_weights(resumed.revision)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    with pytest.raises(ResumeError, match="nothing to resume"):
        run_sft(SFTConfig(adapter="never", **settings), service, resume=True)


def test_sft_over_http_and_the_cli(dataset):
    with ServerThread(create_app(LocalService(dtype="bfloat16"))) as url:
        result = CliRunner().invoke(app, [
            "train", "sft", "--data", str(dataset), "--adapter", "remote", "--model", "tiny", "--rank", "4", "--lr", "5e-3",
            "--epochs", "3", "--batch-tokens", "128", "--mint-url", url, "--json",
        ])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output[result.output.index("{"):])
    assert out["revision"].startswith("molt://session-") and out["revision"].endswith("/remote")
    assert out["eval_loss_after"] < out["eval_loss_before"] and out["tokens_per_s"] > 0
    assert (resolve(out["revision"]) / "adapter_config.json").is_file()
    assert json.loads(Path(out["manifest"]).read_text())["revision"] == out["revision"]


def test_a_run_trains_on_from_a_registered_revision(dataset):
    """`--init-from molt://store/…` starts from that revision (its rank, not --rank's) and records
    where the new revision started from; a bad value is one clear line."""
    from molt.registry import Registry

    def sft(*extra: str) -> dict:
        result = CliRunner().invoke(app, ["train", "sft", "--data", str(dataset), "--model", "tiny", "--lr", "1e-2", "--dtype", "float32", "--batch-tokens", "128", "--json", *extra])
        assert result.exit_code == 0, result.output
        return json.loads(result.output[result.output.index("{"):])

    first = sft("--adapter", "first", "--rank", "4")
    revision = Registry().get(first["record"]).attributes["revision"]
    second = sft("--adapter", "second", "--rank", "8", "--init-from", f"molt://{revision}")
    assert Registry().get(second["record"]).parents["started_from"] == first["record"]
    assert second["eval_loss_before"] == pytest.approx(first["eval_loss_after"], rel=1e-4)  # the same held-out rows, the trained weights
    shapes = lambda out: {k: tuple(v.shape) for k, v in adapter_weights(out["revision"]).items()}
    assert shapes(second) == shapes(first)  # rank 4, as the revision it started from
    result = CliRunner().invoke(app, ["train", "sft", "--data", str(dataset), "--adapter", "third", "--model", "tiny", "--init-from", "molt://store/nothing"])
    assert result.exit_code == 2 and "error:" in result.output
