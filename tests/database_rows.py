"""Waiting for a row a server writes in the background (the proxy's writer thread commits shortly
after it answers)."""

import time

from sqlalchemy.orm import Session


def wait_for(engine, table, key, seconds: float = 120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with Session(engine) as session:
            row = session.get(table, key)
            if row is not None:
                return row
        time.sleep(0.1)
    raise TimeoutError(f"{table.__tablename__} {key} was never written")
