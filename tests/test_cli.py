"""Subprocess smoke tests of the ``molt`` command, as a user runs it. Run: pytest tests/test_cli.py"""

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
    for command in ("up", "chat", "models", "Coming next: engine serve"):
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
