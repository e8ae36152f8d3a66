"""Shared fixtures. The whole session uses one fresh ``MOLT_HOME``, so every cache path is
exercised from empty; the embedded model is converted at most once per session."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


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


@pytest.fixture(scope="session")
def bootstrapped(molt_home):
    """What ``molt up`` does on first start, once per session on the embedded model: the router
    and, to keep the suite within minutes, two of the four specialists (chat and agent: the
    plain-conversation and tool-calling paths); coding and genui answer with the base.
    ``molt bench specialists`` measures all four. Returns (trained HCP, path of its file)."""
    from molt.hcp import load_hcp
    from molt.specialists.bootstrap import bootstrap

    return bootstrap(load_hcp(), labels=["chat", "agent"])
