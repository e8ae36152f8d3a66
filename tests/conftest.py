"""Shared fixtures. The whole session uses one fresh ``MOLT_HOME``, so every cache path is
exercised from empty; the embedded model is converted at most once per session."""

import os
import sys
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
"""The first test that uses ``bootstrapped`` pays for the training (about five minutes on two
cores), so tests that use it get this budget instead of the suite's 600 s per test."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "bootstrapped" in getattr(item, "fixturenames", ()) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(BOOTSTRAP_TIMEOUT_S))


@pytest.fixture(scope="session")
def bootstrapped(molt_home):
    """What ``molt up`` does on first start, once per session on the embedded model, sized for
    CI: the router as shipped (trained on a third of its data, it sent "Name the capital city of
    Italy." with a weather function on offer to the agent); chat, and an agent trained on five of the sixteen function schemas
    (the plain-conversation and tool-calling paths the end-to-end tests drive, on the wording split's functions); coding and genui
    answer with the base. ``molt bench specialists`` measures the full recipes.
    Returns the ``Bootstrapped`` result (HCP, its file, the registered pair)."""
    from molt.hcp import load_hcp
    from molt.specialists.bootstrap import bootstrap
    from molt.families import Recipe

    functions = ["get_weather", "set_timer", "add_todo", "call_contact", "get_stock_price"]
    # at this size the default mix holds ~8 tool-result cases, too few to learn to stop after one
    shapes = {"call": 0.4, "parallel": 0.05, "no_call": 0.25, "result": 0.3}
    recipes = {
        "chat": Recipe(examples=40, epochs=2, batch_tokens=1024),
        "agent": Recipe(examples=100, learning_rate=3e-3, options={"functions": functions, "shapes": shapes}, extras=0),
    }
    return bootstrap(load_hcp(), labels=["chat", "agent"], recipes=recipes)


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
