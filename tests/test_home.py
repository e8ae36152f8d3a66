"""molt's cache folder and its interrupt-safe builds. Run: pytest tests/test_home.py"""

import subprocess
import sys

import pytest

from molt.home import build_once, cache_dir, molt_home


def test_molt_home_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MOLT_HOME", str(tmp_path / "h"))
    assert molt_home() == tmp_path / "h"
    assert cache_dir("models").is_dir()


def test_build_once_builds_then_reuses(tmp_path):
    calls = []

    def build(tmp):
        calls.append(tmp)
        (tmp / "file").write_text("x")

    final = tmp_path / "thing"
    assert build_once(final, build) is True
    assert build_once(final, build) is False
    assert len(calls) == 1 and (final / "file").read_text() == "x"
    assert list(tmp_path.iterdir()) == [final]


def test_interrupted_build_leaves_nothing_behind(tmp_path):
    """A build killed half-way (here: KeyboardInterrupt after writing one file) must not leave a
    folder that a later load would take for a finished model."""

    def build(tmp):
        (tmp / "half").write_text("partial")
        raise KeyboardInterrupt

    final = tmp_path / "thing"
    with pytest.raises(KeyboardInterrupt):
        build_once(final, build)
    assert not final.exists()
    assert list(tmp_path.iterdir()) == []
    assert build_once(final, lambda tmp: (tmp / "ok").write_text("done"))
    assert (final / "ok").read_text() == "done"


def test_stale_temp_folder_of_a_dead_process_is_removed(tmp_path):
    """A process killed with SIGKILL cannot clean up; its temp folder goes at the next build."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".thing.tmp-{int(dead.stdout)}"
    stale.mkdir()
    (stale / "half").write_text("partial")
    build_once(tmp_path / "thing", lambda tmp: None)
    assert not stale.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thing"]
