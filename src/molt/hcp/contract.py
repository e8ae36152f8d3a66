"""Reading, checking, printing and comparing HCP files.

- ``hcp_version`` is required; ``VERSIONS`` enumerates the known versions and their schemas, and
  an unknown version is an error that lists them. A future version adds a schema here and a
  migration from the one before; files are never rewritten in place.
- Every error names the file, and for schema errors the field path (``specialists[2].label``).
"""

import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

import tomli_w
from pydantic import BaseModel, ValidationError

from molt.hcp.v1 import HCPv1

VERSIONS: dict[str, type[BaseModel]] = {"1": HCPv1}
HCP = HCPv1
"""The current version's schema."""


class HCPError(ValueError):
    """An HCP file that cannot be used; the message names the file and the problem."""


def default_hcp_path() -> Path:
    return Path(str(resources.files("molt.hcp") / "default.toml"))


def load_hcp(path: Path | None = None) -> HCP:
    """The HCP at ``path`` (default: the one molt ships), checked against its version's schema."""
    path = path or default_hcp_path()
    return parse_hcp(read_toml(path, HCPError), str(path))


def read_toml(path: Path, error: type[Exception]) -> dict[str, Any]:
    """A TOML file's tables; a missing or malformed file raises ``error`` with one clear line."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise error(f"{path}: no such file") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise error(f"{path}: not valid TOML: {e}") from None


def parse_hcp(data: dict[str, Any], where: str = "HCP") -> HCP:
    supported = ", ".join(VERSIONS)
    if "hcp_version" not in data:
        raise HCPError(f"{where}: hcp_version is required (supported versions: {supported})")
    version = str(data["hcp_version"])
    if version not in VERSIONS:
        raise HCPError(f"{where}: unknown hcp_version {data['hcp_version']!r}; supported versions: {supported}")
    try:
        return VERSIONS[version].model_validate({**data, "hcp_version": version})
    except ValidationError as e:
        problems = [f"{field_path(p['loc'])}: {p['msg']}" for p in e.errors()]
        raise HCPError(f"{where}: " + "; ".join(problems)) from None


def field_path(loc: tuple) -> str:
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "(top level)"


def to_toml(hcp: BaseModel) -> str:
    """The HCP with every default filled in, as TOML (the form ``molt hcp show`` prints)."""
    return tomli_w.dumps(hcp.model_dump(exclude_none=True))


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted paths → leaf values; specialists are keyed by label and tool proxies by name, so
    reordering them is no change."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if (prefix, key) == ("", "specialists"):
                item = {s["label"]: s for s in item}
            elif (prefix, key) == ("tools.", "proxies"):
                item = {p["name"]: p for p in item}
            out.update(flatten(item, f"{prefix}{key}."))
        return out
    return {prefix.rstrip("."): value}


def diff_hcp(a: BaseModel, b: BaseModel) -> list[str]:
    """Changes from ``a`` to ``b``: ``+ path = value``, ``- path = value``, ``~ path: old → new``."""
    old, new = flatten(a.model_dump()), flatten(b.model_dump())
    lines = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            lines.append(f"- {path} = {old[path]!r}")
        elif path not in old:
            lines.append(f"+ {path} = {new[path]!r}")
        elif old[path] != new[path]:
            lines.append(f"~ {path}: {old[path]!r} → {new[path]!r}")
    return lines
