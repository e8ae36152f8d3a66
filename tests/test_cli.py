"""Subprocess smoke tests of the ``molt`` command, as a user runs it. Run: pytest tests/test_cli.py"""

import json
import os
import subprocess
import sys

import pytest


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
    for command in ("up", "chat", "models", "engine", "bench", "Coming next: proxy serve"):
        assert command in result.stdout


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
def test_up_answers_piped_questions(embedded):
    """``make up`` runs ``molt up``; with questions on stdin it answers each and exits at EOF."""
    result = molt("up", stdin="What is the capital of France?\n/reset\n/exit\n")
    assert result.returncode == 0
    assert "Paris" in result.stdout and "conversation cleared" in result.stdout


def test_bench_serve_at_toy_size():
    result = molt(
        "bench", "serve", "--model", "tiny", "--batch-sizes", "1,2", "--new-tokens", "4", "--prompt-tokens", "8",
        "--conversation-tokens", "64", "--repeats", "1", "--json",
    )
    assert result.returncode == 0
    figures = json.loads(result.stdout)
    for key in ("mixed_vs_raw", "mixed_vs_hf_generate", "mixed_vs_peft", "prefix_hit_ttft_vs_cold", "roofline_fraction"):
        assert figures[key] > 0
    assert figures["mixed_b2_tok_s"] > 0 and figures["dtype"] in ("bfloat16", "float32")


def test_engine_serve_answers_the_openai_client(tmp_path):
    """`molt engine serve` as a user starts it: a real process on a free port, an adapter loaded
    at start, answering the official client, stopped by SIGINT."""
    import signal
    import socket
    import time

    import httpx
    import openai

    from molt.lora.synthetic import write_random_adapter
    from molt.models import load_model

    write_random_adapter(tmp_path / "ad", load_model("tiny").model, "tiny", r=2)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "molt", "engine", "serve", "--model", "tiny", "--port", str(port), "--adapters-root", str(tmp_path), "--lora", "ad=ad"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
        assert [m.id for m in client.models.list().data] == ["tiny", "ad"]
        reply = client.chat.completions.create(model="ad", messages=[{"role": "user", "content": "hi"}], max_tokens=3)
        assert reply.usage.completion_tokens == 3
    finally:
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=30)[0]
        print(output[-2000:])
    assert process.returncode == 0 and f"127.0.0.1:{port}" in output


def test_engine_serve_refuses_a_bad_lora_option(tmp_path):
    result = molt("engine", "serve", "--model", "tiny", "--adapters-root", str(tmp_path), "--lora", "x=missing")
    assert result.returncode == 2 and "no adapter folder" in result.stderr
