"""A throwaway PostgreSQL server: ``initdb`` into a temporary folder, started on a free port,
stopped and removed at the end (the tests, and benchmarks run without ``--db``). Debian's
``postgresql`` package (``make test`` installs it when missing). PostgreSQL refuses to run as
root, so as root the server runs as the ``postgres`` user."""

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_bin(name: str) -> str | None:
    """A PostgreSQL program: Debian's newest major version, else the one on the PATH."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=lambda path: [int(p) if p.isdigit() else 0 for p in Path(path).parts[-3].split(".")])
    return found[-1] if found else shutil.which(name)


def _as_server_user(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def postgres_server() -> Iterator[str]:
    """Yields the server's base URL, ``postgresql://postgres@127.0.0.1:PORT``."""
    initdb, pg_ctl = find_bin("initdb"), find_bin("pg_ctl")
    if not initdb or not pg_ctl:
        raise FileNotFoundError("PostgreSQL's initdb/pg_ctl not found: install Debian's postgresql package (make test does)")
    folder = Path(tempfile.mkdtemp(prefix="molt-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, port = folder / "data", free_port()
    subprocess.run(_as_server_user([initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]), check=True, capture_output=True)
    options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
    subprocess.run(_as_server_user([pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]), check=True, capture_output=True)
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}"
    finally:
        subprocess.run(_as_server_user([pg_ctl, "-D", str(data), "-m", "immediate", "stop"]), capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def _administer(server: str, statement: str) -> None:
    """Run ``statement`` on the server's ``postgres`` database, outside a transaction (as CREATE and DROP DATABASE need)."""
    import psycopg

    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(statement)


def create_database(server: str, name: str) -> str:
    _administer(server, f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"


def drop_database(server: str, name: str) -> None:
    _administer(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
