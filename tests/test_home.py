"""molt's cache folder and its interrupt-safe builds. Run: pytest tests/test_home.py"""

import subprocess
import sys

import pytest

from molt.home import build_once, cache_dir, molt_home, replace_folder, write_atomic


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


def test_a_failed_write_leaves_the_old_file_whole(tmp_path, monkeypatch):
    path = write_atomic(tmp_path / "hcp.toml", "old = 1\n")
    monkeypatch.setattr("molt.home.os.replace", lambda *a: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError, match="disk full"):
        write_atomic(path, "new = 2\n")
    assert path.read_text() == "old = 1\n" and list(tmp_path.iterdir()) == [path]  # no temp file left


def test_replace_folder_keeps_the_old_folder_until_the_new_one_is_built(tmp_path):
    final = tmp_path / "router"
    replace_folder(final, lambda tmp: (tmp / "router.json").write_text("v1"))

    def broken(tmp):
        (tmp / "router.json").write_text("half")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError, match="interrupted"):
        replace_folder(final, broken)
    assert (final / "router.json").read_text() == "v1" and list(tmp_path.iterdir()) == [final]
    replace_folder(final, lambda tmp: (tmp / "router.json").write_text("v2"))
    assert (final / "router.json").read_text() == "v2" and list(tmp_path.iterdir()) == [final]
