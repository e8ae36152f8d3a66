"""Subprocess smoke tests of the ``molt`` command, as a user runs it. Run: pytest tests/test_cli.py"""

import contextlib
import json
import os
import signal
import subprocess
import sys

import httpx
import pytest

from molt_processes import free_port, wait_until_healthy
from toy_sizes import TINY_ROUTER


def molt(*args: str, stdin: str | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-m", "molt", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "120"},
    )
    print(result.stdout[-2000:], result.stderr[-2000:], sep="\n")  # shown by pytest on failure
    return result


def test_help_lists_the_commands_and_what_comes():
    result = molt("--help")
    assert result.returncode == 0
    for command in ("up", "chat", "models", "engine", "bench", "mint", "train", "proxy", "hcp", "specialists", "router", "evolve", "Coming next:"):
        assert command in result.stdout


def test_the_command_starts_without_loading_torch():
    """`molt --help`, `molt registry …` and request checks start in under a second: torch and
    transformers are imported by the commands that load a model, when they do."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, molt.cli, molt.http_api; print(sorted({'torch', 'transformers', 'peft'} & set(sys.modules)))"],
                            capture_output=True, text=True, timeout=60)
    assert loaded.returncode == 0 and loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr


def test_models_info_tiny():
    result = molt("models", "info", "tiny:qwen3")
    assert result.returncode == 0
    assert "qwen3 (Qwen3ForCausalLM)" in result.stdout and "3,219,840" in result.stdout


@pytest.mark.parametrize("source,message", [("nope", "unknown model source 'nope'"), ("/no/such/dir", "no model folder")])
def test_models_info_bad_source_is_one_clear_line(source, message):
    result = molt("models", "info", source)
    assert result.returncode == 2
    assert message in " ".join(result.stderr.split()) and "Traceback" not in result.stderr


@pytest.mark.embedded
def test_chat_one_message(embedded):
    result = molt("chat", "What is the capital of France?")
    assert result.returncode == 0 and "Paris" in result.stdout
    assert "from cache" in result.stderr


@pytest.mark.embedded
def test_up_answers_piped_questions_through_the_trained_stack(embedded, bootstrapped):
    """``make up`` runs ``molt up`` (engine + proxy + page) on the bootstrapped specialists (trained
    once, then cached); with questions on stdin it answers each through the proxy, naming the
    specialist, and exits at EOF."""
    port, engine_port = free_port(), free_port()
    questions = "What is the capital of France?\nWrite a Python function `double(x)` that returns x times 2.\n"
    result = molt("up", "--port", str(port), "--engine-port", str(engine_port), stdin=questions)
    assert result.returncode == 0 and "First start" not in result.stderr  # the cached specialists are served
    assert f"serving production: pair {bootstrapped.pair.id}" in " ".join(result.stderr.split())  # the registry's production pair
    assert "molt [chat] › The capital of France is Paris." in result.stdout and "molt [coding] › " in result.stdout
    assert f"engine: http://127.0.0.1:{engine_port}/v1" in result.stderr


@pytest.mark.embedded
def test_bootstrap_is_done_once_and_the_trained_router_is_scored(embedded, bootstrapped):
    hcp, path = bootstrapped.hcp, bootstrapped.path
    trained = {s.label: s for s in hcp.specialists if s.adapter}
    assert set(trained) == {"chat", "agent"} and all(s.adapter == s.label and s.revision.startswith("store/") for s in trained.values())
    assert bootstrapped.alias == "production"
    lineage = molt("registry", "lineage", "production")
    assert lineage.returncode == 0 and bootstrapped.pair.id in lineage.stdout and "production" in lineage.stdout
    assert all(f"specialist:{label}: adapter" in lineage.stdout for label in trained) and "trained_by: job" in lineage.stdout
    assert hcp.router.kind == "classifier" and molt("hcp", "validate", str(path)).returncode == 0
    again = molt("specialists", "bootstrap")
    assert again.returncode == 0 and "already bootstrapped" in again.stdout
    result = molt("router", "eval", "--per-label", "10", "--json")
    report = json.loads(result.stdout)
    assert report["router"] == "classifier" and report["n"] == 40 and report["accuracy"] >= 0.95
    assert set(report["confusion"]) == {"chat", "agent", "coding", "genui"}


@pytest.mark.embedded
def test_bench_route_and_specialists_at_toy_size(embedded, bootstrapped):
    result = molt("bench", "route", "--per-label", "3", "--conversations", "1", "--turns", "3", "--think-seconds", "0.2", "--json")
    figures = json.loads(result.stdout)
    assert figures["n"] == 12 and 0 <= figures["accuracy"] <= 1 and set(figures["per_class"]) == {"chat", "agent", "coding", "genui"}
    assert 0 < figures["route_share"] < 1 and 0 <= figures["summary_share"] < 1 and figures["median_turn_s"] > 0
    result = molt("bench", "specialists", "--per-family", "1", "--json")
    splits = json.loads(result.stdout)["splits"]
    evaluation = json.loads(result.stdout)["evaluation"]  # of the production pair, in the registry
    shown = json.loads(molt("registry", "show", evaluation).stdout)
    assert shown["parents"] == {"subject": bootstrapped.pair.id} and shown["attributes"]["metrics"]["heldout.chat.routed.score"]["n"] == 1
    assert set(splits) == {"heldout", "wording"}
    for families in splits.values():
        assert set(families) == {"chat", "agent"}  # the trained ones
        assert all(set(systems) == {"base", "specialist", "routed"} and systems["base"]["n"] == 1 for systems in families.values())
        assert "exact_match" in families["agent"]["specialist"] and "no_call_recall" in families["agent"]["routed"]
    assert molt("bench", "specialists", "--split", "nope").returncode == 2


def test_router_train_learns_from_traffic_and_names_bad_lines(tmp_path):
    from molt.hcp import load_hcp, to_toml

    hcp = load_hcp()
    hcp = hcp.model_copy(update={"model": hcp.model.model_copy(update={"base": "tiny"})})
    (tmp_path / "tiny.toml").write_text(to_toml(hcp))
    (tmp_path / "traffic.jsonl").write_text('{"text": "open the garage door", "label": "agent"}\n')
    result = molt("router", "train", "--hcp", str(tmp_path / "tiny.toml"), "--traffic", str(tmp_path / "traffic.jsonl"), "--layer", "2", "--out", str(tmp_path / "router"))
    assert result.returncode == 0 and "held-out accuracy" in result.stdout
    assert json.loads((tmp_path / "router" / "router.json").read_text())["info"]["train_requests"] > 1000
    (tmp_path / "traffic.jsonl").write_text('{"text": "open the garage door", "label": "butler"}\n')
    result = molt("router", "train", "--hcp", str(tmp_path / "tiny.toml"), "--traffic", str(tmp_path / "traffic.jsonl"))
    assert result.returncode == 2 and "traffic.jsonl:1" in result.stderr


def test_up_serves_the_stack_until_ctrl_c(embedded):
    """Without piped questions `molt up` serves: the chat page at /, the proxy's API naming the
    specialist, the engine on its own port; SIGINT stops the whole process cleanly. (Here on the
    shipped HCP as is: --no-bootstrap, the base answering for every label.)"""
    port, engine_port = free_port(), free_port()
    with serving("up", "--no-bootstrap", "--port", str(port), "--engine-port", str(engine_port), port=port):
        assert "/static/app.js" in httpx.get(f"http://127.0.0.1:{port}/").text and "/v1/chat/completions" in httpx.get(f"http://127.0.0.1:{port}/static/app.js").text
        reply = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", json={"model": "molt", "messages": [{"role": "user", "content": "What is the capital of France?"}]}, timeout=120).json()
        assert reply["molt"]["specialist"] == "chat" and "Paris" in reply["choices"][0]["message"]["content"]
        assert httpx.get(f"http://127.0.0.1:{engine_port}/v1/models").json()["data"][0]["id"] == "embedded"


def test_bench_serve_at_toy_size():
    result = molt(
        "bench", "serve", "--model", "tiny", "--batch-sizes", "1,2", "--new-tokens", "4", "--prompt-tokens", "8",
        "--conversation-tokens", "64", "--repeats", "1", "--json",
    )
    assert result.returncode == 0
    figures = json.loads(result.stdout)
    for key in ("mixed_vs_raw", "mixed_vs_hf_generate", "mixed_vs_peft", "prefix_hit_ttft_vs_cold", "roofline_fraction"):
        assert figures[key] > 0
    assert figures["mixed_b2_tok_s"] > 0 and figures["dtype"] in ("bfloat16", "float32") and figures["like_for_like"]


@contextlib.contextmanager
def serving(*args: str, port: int):
    """``molt ARGS`` as a real process until its /health answers; stopped by SIGINT afterwards,
    which must end it cleanly. Yields a list that receives the process output."""
    process = subprocess.Popen([sys.executable, "-m", "molt", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output: list[str] = []
    try:
        wait_until_healthy(process, port)
        yield output
    finally:
        process.send_signal(signal.SIGINT)
        output.append(process.communicate(timeout=30)[0])
        print(output[-1][-2000:])
    assert process.returncode == 0 and f"127.0.0.1:{port}" in output[-1]


def test_engine_serve_answers_the_openai_client(tmp_path):
    """`molt engine serve` as a user starts it: a real process on a free port, an adapter loaded
    at start, answering the official client, stopped by SIGINT."""
    import openai

    from molt.lora.synthetic import write_random_adapter
    from molt.models import load_model

    write_random_adapter(tmp_path / "ad", load_model("tiny").model, "tiny", r=2)
    port = free_port()
    with serving("engine", "serve", "--model", "tiny", "--port", str(port), "--adapters-root", str(tmp_path), "--lora", "ad=ad", port=port):
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
        assert [m.id for m in client.models.list().data] == ["tiny", "ad"]
        reply = client.chat.completions.create(model="ad", messages=[{"role": "user", "content": "hi"}], max_tokens=3)
        assert reply.usage.completion_tokens == 3


def test_mint_serve_trains_for_a_remote_client():
    from molt.mint import AdamParams, Datum, ModelInput, ServiceClient
    from molt.mint.checkpoints import resolve

    tokens = list(range(100, 112))
    datum = Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * 11})

    port = free_port()
    with serving("mint", "serve", "--port", str(port), "--dtype", "float32", "--base", "tiny", port=port):
        client = ServiceClient(base_url=f"http://127.0.0.1:{port}").create_lora_training_client("tiny", rank=2, seed=0)
        first = client.forward_backward([datum], "cross_entropy").result().metrics["loss:sum"]
        client.optim_step(AdamParams(learning_rate=1e-2))
        assert client.forward([datum], "cross_entropy").result().metrics["loss:sum"] < first
        assert (resolve(client.save_weights_for_sampler("cli").result()) / "adapter_model.safetensors").is_file()


def test_bench_train_at_toy_size():
    result = molt("bench", "train", "--model", "tiny", "--examples", "8", "--batch-size", "4", "--json", timeout=600)
    assert result.returncode == 0
    figures = json.loads(result.stdout)
    for key in ("molt_tokens_per_s", "trl_tokens_per_s", "speedup", "molt_peak_mb", "trl_peak_mb"):
        assert figures[key] > 0
    assert figures["molt_steps"] == figures["trl_steps"] == 2 and figures["like_for_like"]


def test_engine_serve_refuses_a_bad_lora_option(tmp_path):
    result = molt("engine", "serve", "--model", "tiny", "--adapters-root", str(tmp_path), "--lora", "x=missing")
    assert result.returncode == 2 and "no adapter folder" in result.stderr


def test_bench_proxy_at_toy_size(tmp_path):
    from molt.hcp import load_hcp, to_toml

    hcp = load_hcp()
    hcp = hcp.model_copy(update={"model": hcp.model.model_copy(update={"base": "tiny"})})
    (tmp_path / "tiny.toml").write_text(to_toml(hcp))
    result = molt("bench", "proxy", "--hcp", str(tmp_path / "tiny.toml"), "--conversations", "1", "--think-seconds", "0", "--max-tokens", "4", "--json")
    assert result.returncode == 0
    figures = json.loads(result.stdout)
    assert figures["median_turn_s_summaries_on"] > 0 and figures["median_turn_s_summaries_off"] > 0
    assert 0 < figures["route_share"] < 1 and figures["summary_latency_ratio"] > 0


def test_bootstrap_progress_follows_every_step_of_a_bootstrap(tmp_path, monkeypatch, capsys):
    """The progress `molt specialists bootstrap` shows, driven by a real (tiny, toy-sized)
    bootstrap: each callback the bootstrap makes must fit the CLI's."""
    from molt import cli
    from molt.families import Recipe
    from molt.hcp import load_hcp
    from molt.specialists.bootstrap import bootstrap

    monkeypatch.setenv("MOLT_HOME", str(tmp_path))
    shipped = load_hcp()
    shipped = shipped.model_copy(update={"model": shipped.model.model_copy(update={"base": "tiny"})})
    with cli._bootstrap_progress() as progress:
        done = bootstrap(shipped, labels=["chat"], progress=progress, recipes={"chat": Recipe(examples=6, batch_tokens=1024)}, router=TINY_ROUTER)
    assert done.path.is_file() and {s.label: s.adapter for s in done.hcp.specialists}["chat"] == "chat"
    shown = capsys.readouterr().err
    assert "training chat" in shown and "router:" in shown and "training requests" in shown


def test_doctor_names_the_sandbox_isolation_mode():
    result = molt("doctor")
    assert result.returncode == 0
    assert "bubblewrap: mount, network, pid" in result.stdout
    weak = subprocess.run([sys.executable, "-m", "molt", "doctor"], capture_output=True, text=True, env={**os.environ, "COLUMNS": "200", "MOLT_SANDBOX": "rlimits"})
    assert weak.returncode == 1 and "NOT fenced off" in weak.stdout
