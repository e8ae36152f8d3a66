"""Printing benchmark results: a rich table for people, one JSON object for machines."""

import json

from rich.console import Console
from rich.table import Table


def print_rows(title: str, columns: list[str], rows: list[list], console: Console | None = None) -> None:
    table = Table(title=title)
    for column in columns:
        table.add_column(column, justify="right" if column != columns[0] else "left")
    for row in rows:
        table.add_row(*[f"{v:,.2f}" if isinstance(v, float) else str(v) for v in row])
    (console or Console()).print(table)


def print_json(result: dict) -> None:
    print(json.dumps(result, indent=2, sort_keys=True))
