"""Escape and abuse tests of the sandboxed sessions: each attack is contained with a clear error
within its limit, and the server (this process) and another session carry on."""

import os
import socket
import subprocess
import threading
from pathlib import Path

import pytest

from molt.harness.substrate import Isolation, Limits, Session, Substrate, isolation
from molt.home import molt_home

PROJECT = Path(__file__).resolve().parents[2]
LIMITS = Limits(cpu_s=4, memory_bytes=256 << 20, processes=16, wall_s=3, output_bytes=4096, file_bytes=1 << 20, tmp_bytes=4 << 20)


@pytest.fixture(scope="module")
def substrate(tmp_path_factory):
    substrate = Substrate(tmp_path_factory.mktemp("sessions"), LIMITS)
    yield substrate
    substrate.close()


@pytest.fixture(scope="module")
def bystander(substrate):
    """Another conversation's session, with state the attacks must not touch."""
    assert substrate.run("bystander", "kept = 'still here'").error is None
    return substrate


def carry_on(substrate: Substrate) -> None:
    assert substrate.run("bystander", "kept").value == "'still here'"
    assert substrate.run("attacker", "1 + 1").value == "2"


def test_the_machine_runs_the_strong_isolation():
    """`make services` installs bubblewrap: the fallback on this machine would be a setup failure."""
    print(isolation().describe())
    assert isolation().mode == "bubblewrap", isolation().why


def test_variables_persist_and_the_workspace_is_the_only_writable_place(bystander):
    assert bystander.run("attacker", "total = 40").error is None
    assert bystander.run("attacker", "total + 2").value == "42"
    assert bystander.run("attacker", "open('notes.txt', 'w').write('kept')").value == "4"
    assert (bystander.workspace("attacker") / "notes.txt").read_text() == "kept"


@pytest.mark.parametrize("path", ["/etc/passwd", str(PROJECT / "pyproject.toml"), str(molt_home())])
def test_reading_outside_the_workspace_finds_nothing(bystander, path):
    outcome = bystander.run("attacker", f"import os; os.listdir({path!r}) if os.path.isdir({path!r}) else open({path!r}).read()")
    assert outcome.error and ("FileNotFoundError" in outcome.error or "PermissionError" in outcome.error), outcome
    carry_on(bystander)


@pytest.mark.parametrize("path", ["/etc/molt-escape", "/usr/molt-escape", str(PROJECT / "molt-escape"), str(molt_home() / "molt-escape"), "../molt-escape"])
def test_writing_outside_the_workspace_fails(bystander, path):
    outcome = bystander.run("attacker", f"open({path!r}, 'w').write('x')")
    assert outcome.error and any(e in outcome.error for e in ("FileNotFoundError", "PermissionError", "OSError")), outcome
    assert not Path(path).exists() and not (bystander.root / "molt-escape").exists()
    carry_on(bystander)


def test_no_socket_reaches_this_machine_or_outside(bystander):
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []
    threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True).start()
    port = server.getsockname()[1]
    local = bystander.run("attacker", f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)")
    outside = bystander.run("attacker", "import socket; socket.create_connection(('93.184.216.34', 80), timeout=2)")
    server.close()
    assert "ConnectionRefusedError" in local.error and not accepted, local
    assert "Network is unreachable" in outside.error, outside
    carry_on(bystander)


def test_a_fork_bomb_stops_at_the_process_limit(bystander):
    outcome = bystander.run("attacker", "import os\nwhile True:\n    os.fork()")
    assert "BlockingIOError" in (outcome.error or "") or "wall-clock" in (outcome.error or ""), outcome
    carry_on(bystander)
    uid = bystander.session("attacker").uid
    left = subprocess.run(["pgrep", "-u", str(uid)], capture_output=True, text=True).stdout.split()
    assert len(left) <= 1, f"processes of the sandbox uid left after the run: {left}"


def test_a_memory_bomb_gets_a_memory_error(bystander):
    outcome = bystander.run("attacker", "hog = bytearray(1 << 30)")
    assert "MemoryError" in outcome.error and not outcome.restarted
    carry_on(bystander)


def test_an_infinite_loop_is_stopped_at_the_wall_clock_and_the_session_restarts(bystander):
    bystander.run("attacker", "before = 1")
    outcome = bystander.run("attacker", "while True:\n    pass")
    assert outcome.restarted and "wall-clock limit of 3 s" in outcome.error and "restarted" in outcome.error
    assert outcome.seconds < LIMITS.wall_s + 2
    assert "NameError" in bystander.run("attacker", "before").error  # told, and true: variables are gone
    carry_on(bystander)


def test_cpu_time_past_the_limit_ends_the_session(tmp_path):
    session = Session(tmp_path / "cpu", Limits(cpu_s=1, wall_s=20))
    outcome = session.run("import time\nend = time.time() + 15\nwhile time.time() < end:\n    pass")
    session.close()
    assert outcome.restarted and "CPU limit of 1 s" in outcome.error, outcome


def test_huge_output_is_cut(bystander):
    outcome = bystander.run("attacker", "print('x' * 10_000_000)")
    assert len(outcome.output) < LIMITS.output_bytes + 200 and "[output cut" in outcome.output
    big_file = bystander.run("attacker", "open('big', 'wb').write(b'x' * (8 << 20))")
    assert "File too large" in big_file.error, big_file
    carry_on(bystander)


def test_a_ctypes_crash_restarts_the_session(bystander):
    outcome = bystander.run("attacker", "import ctypes; ctypes.string_at(0)")
    assert outcome.restarted and "SIGSEGV" in outcome.error
    carry_on(bystander)


def test_the_parent_and_the_server_cannot_be_killed(bystander):
    parent = bystander.run("attacker", "import os; os.kill(os.getppid(), 9)")
    server = bystander.run("attacker", f"import os; os.kill({os.getpid()}, 9)")
    assert "PermissionError" in parent.error, parent
    assert "ProcessLookupError" in server.error, server  # another pid namespace: the server is not there
    carry_on(bystander)


def test_snapshot_restore_and_a_branch_get_their_own_copy(substrate):
    substrate.run("trunk", "orders = [{'id': 1, 'total': 9.5}]\nopen('data.csv', 'w').write('id,total\\n1,9.5\\n')\nimport math")
    branch = substrate.branch("trunk", "branch")
    assert branch.run("orders[0]['total']").value == "9.5"
    assert branch.run("open('data.csv').read()").value == repr("id,total\n1,9.5\n")
    branch.run("orders.append({'id': 2, 'total': 1.0})")
    assert substrate.run("trunk", "len(orders)").value == "1"
    assert branch.run("len(orders)").value == "2"
    substrate.drop("branch")
    assert not substrate.workspace("branch").exists()


def test_a_session_key_cannot_name_a_path(substrate):
    assert substrate.workspace("../../etc").parent == substrate.root


def test_the_fallback_contains_what_it_claims_and_says_what_it_does_not(tmp_path):
    weak = Isolation("rlimits", False, "forced by the test")
    assert "NOT fenced off" in weak.describe()
    session = Session(tmp_path / "weak", LIMITS, iso=weak)
    assert session.run("x = 3\nx * 2").value == "6"
    assert "MemoryError" in session.run("hog = bytearray(1 << 30)").error
    assert "[output cut" in session.run("print('y' * 100_000)").output
    looped = session.run("while True:\n    pass")
    assert looped.restarted and "wall-clock" in looped.error
    assert "SIGSEGV" in session.run("import ctypes; ctypes.string_at(0)").error
    session.close()


def test_the_server_environment_and_its_secrets_stay_outside(bystander, monkeypatch):
    monkeypatch.setenv("SHOP_API_TOKEN", "never-inside")
    session = Session(bystander.root / "fresh-env", LIMITS)
    try:
        outcome = session.run("import os; sorted(os.environ)")
    finally:
        session.close()
    assert "SHOP_API_TOKEN" not in outcome.value and "MOLT_HOME" not in outcome.value, outcome
