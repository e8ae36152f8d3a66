"""Reading the small JSON files that describe models and adapters, with errors that name the file."""

import json
from pathlib import Path


def read_json_object(file: Path, error: type[Exception]) -> dict:
    """The JSON object in ``file``; raises ``error`` naming the file if it is not valid JSON or not an object."""
    try:
        data = json.loads(file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{file}: not valid JSON ({e})") from e
    if not isinstance(data, dict):
        raise error(f"{file}: expected a JSON object")
    return data
