"""A real PostgreSQL server for the tests: ``initdb`` into a temporary folder, started on a free
port, stopped at the end. Debian's ``postgresql`` package (``make test`` installs it when
missing). PostgreSQL refuses to run as root, so as root the server runs as the ``postgres`` user."""

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from molt_processes import free_port


def find_bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
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


def create_database(server: str, name: str) -> str:
    import psycopg

    with psycopg.connect(server.replace("postgresql://", "postgresql://", 1) + "/postgres", autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return f"{server}/{name}"
