"""Proxy test fixtures: a tiny engine with scripted specialists (see scripted_stack.py)."""

import pytest

from scripted_stack import serve_engine


@pytest.fixture(scope="module")
def engine_url(tmp_path_factory):
    yield from serve_engine(tmp_path_factory)
