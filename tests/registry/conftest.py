import uuid

import pytest

from postgres_server import create_database, postgres_server


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
