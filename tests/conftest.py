"""Shared fixtures. The whole session uses one fresh ``MOLT_HOME``, so every cache path is
exercised from empty; the embedded model is converted at most once per session."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from molt.registry.local_postgres import create_database, postgres_server  # noqa: E402, I001


@pytest.fixture(scope="session", autouse=True)
def molt_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("molt-home")
    previous = os.environ.get("MOLT_HOME")
    os.environ["MOLT_HOME"] = str(home)
    yield home
    if previous is None:
        os.environ.pop("MOLT_HOME", None)
    else:
        os.environ["MOLT_HOME"] = previous


@pytest.fixture(scope="session")
def tiny():
    from molt.models import load_model

    return load_model("tiny")


@pytest.fixture(scope="session")
def embedded():
    """The real embedded model; the first use in a session converts it into the fresh cache."""
    from molt.models import load_model

    return load_model("embedded")


@pytest.fixture(scope="session")
def renderer(tiny):
    from molt.models.renderer import get_renderer

    return get_renderer(tiny.tokenizer)


BOOTSTRAP_TIMEOUT_S = 1800
"""Tests that use ``bootstrapped`` may wait for the session's bootstrap (about eight minutes on one
core), so they get this budget instead of the suite's 600 s per test."""


def uses_bootstrap(item: pytest.Item) -> bool:
    return "bootstrapped" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    """The modules that use ``bootstrapped`` run last, whole (their module fixtures stay up), so
    the bootstrap started with the session has the rest of the suite to finish beside it."""
    late = {getattr(item, "module", None) for item in items if uses_bootstrap(item)}
    items.sort(key=lambda item: getattr(item, "module", None) in late)
    session.config.stash[WANTS_BOOTSTRAP] = bool(late)
    session.config.stash[WANTS_CORRUPTED] = any("corrupted" in getattr(item, "fixturenames", ()) for item in items)
    for item in items:
        if uses_bootstrap(item) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BOOTSTRAP_TIMEOUT_S))


WANTS_BOOTSTRAP = pytest.StashKey[bool]()
WANTS_CORRUPTED = pytest.StashKey[bool]()


@pytest.fixture(scope="session", autouse=True)
def session_bootstrap(request: pytest.FixtureRequest, molt_home: Path, tmp_path_factory: pytest.TempPathFactory):
    """Starts ``tests/session_bootstrap.py`` when a selected test needs it, once the session has
    converted the embedded model itself (a test checks that the session's first load converts).
    It shares the session's ``MOLT_HOME`` and registry; it trains the corrupted candidates too
    when a selected test needs them."""
    if not request.config.stash.get(WANTS_BOOTSTRAP, False):
        yield None
        return
    request.getfixturevalue("embedded")
    folder = tmp_path_factory.mktemp("session-bootstrap")
    script = Path(__file__).parent / "session_bootstrap.py"
    command = [sys.executable, str(script), str(folder)] + (["--corrupted"] if request.config.stash.get(WANTS_CORRUPTED, False) else [])
    with (folder / "output.log").open("w") as output:
        process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT)
    yield process, folder
    if process.poll() is None:
        process.kill()
    process.wait()


def background_result(session_bootstrap, name: str) -> dict:
    """The JSON the session's bootstrap process writes as ``name``, once it is there."""
    process, folder = session_bootstrap
    deadline = time.monotonic() + BOOTSTRAP_TIMEOUT_S - 60
    while not (folder / name).is_file():
        if process.poll() is not None and not (folder / name).is_file():
            raise RuntimeError(f"the session's bootstrap stopped ({process.returncode}) without {name}:\n{(folder / 'output.log').read_text()[-4000:]}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"the session's bootstrap did not write {name} in time")
        time.sleep(1)
    return json.loads((folder / name).read_text())


@pytest.fixture(scope="session")
def bootstrapped(session_bootstrap):
    """What ``molt up`` does on first start, once per session (``tests/session_bootstrap.py``):
    the ``Bootstrapped`` result (HCP, its file, the registered pair)."""
    from molt.registry import Registry
    from molt.registry.pairs import pair_hcp
    from molt.specialists.bootstrap import Bootstrapped

    done = background_result(session_bootstrap, "bootstrap.json")
    registry = Registry()
    return Bootstrapped(pair_hcp(registry, done["pair"]), Path(done["path"]), registry.get(done["pair"]), done["alias"])


@pytest.fixture(scope="session")
def corrupted(session_bootstrap, bootstrapped) -> dict[str, str]:
    """Specialist → the bootstrapped pair with that specialist trained on corrupted labels
    (``tests/session_bootstrap.py``), for the gate's tests."""
    return background_result(session_bootstrap, "corrupted.json")


@pytest.fixture(scope="session")
def postgres():
    with postgres_server() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    """A fresh, empty database of each kind: a SQLite file, or a new database on the test server."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'registry.db'}"
    return create_database(request.getfixturevalue("postgres"), f"molt_{uuid.uuid4().hex[:12]}")
