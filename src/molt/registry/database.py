"""Opening the registry's database: a SQLAlchemy URL (``--db`` / ``$MOLT_DB``), else a SQLite file
under ``$MOLT_HOME``; the schema is brought to the newest Alembic revision on open.

SQLite: WAL (readers never wait on the writer), and ``BEGIN IMMEDIATE`` for transactions that
write (on an engine from ``for_writing``), so concurrent writers queue on the database lock
instead of failing when a reader upgrades to a writer; a busy timeout lets them wait. Reads
begin plainly and never take the lock. PostgreSQL (psycopg 3): ``postgresql+psycopg://...``;
the first migration is serialised across processes by an advisory lock.
"""

import contextlib
import os
import tempfile
from collections.abc import Iterator
from importlib import resources

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, create_engine, event

from molt.home import molt_home

DB_ENV = "MOLT_DB"


def default_url() -> str:
    return os.environ.get(DB_ENV) or f"sqlite:///{molt_home() / 'registry.db'}"


def open_database(url: str | None = None) -> Engine:
    url = url or default_url()
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")  # psycopg 3, not psycopg2
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 60, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_connect)
        event.listen(engine, "begin", _sqlite_begin)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    migrate(engine)
    return engine


@contextlib.contextmanager
def scratch_database() -> Iterator[str]:
    """A SQLite database in a temporary folder, removed afterwards: benchmarks keep their traffic
    (held-out cases among it) out of the experience log that training reads."""
    with tempfile.TemporaryDirectory(prefix="molt-scratch-") as folder:
        yield f"sqlite:///{folder}/scratch.db"


def for_writing(engine: Engine) -> Engine:
    """The same engine (same pool) for sessions that write: on SQLite they take the write lock up front."""
    return engine.execution_options(molt_write=True)


def migrate(engine: Engine) -> None:
    """Upgrade the schema to the newest revision (idempotent)."""
    config = Config()
    config.set_main_option("script_location", str(resources.files("molt.registry") / "migrations"))
    with for_writing(engine).begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.exec_driver_sql("SELECT pg_advisory_xact_lock(7242)")  # one migrating process at a time
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


def _sqlite_begin(connection) -> None:
    write = connection.get_execution_options().get("molt_write", False)
    connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _sqlite_connect(connection, _record) -> None:
    connection.isolation_level = None  # transactions are begun by the "begin" hook above
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
