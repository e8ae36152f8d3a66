"""What this machine gives molt: each part, whether it is there, and what runs instead when not."""

import shutil
import subprocess
from dataclasses import dataclass

from molt.home import molt_home
from molt.registry.local_postgres import find_bin


@dataclass(frozen=True)
class Check:
    part: str
    ok: bool
    detail: str


def version_of(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"does not run: {e}"
    return (done.stdout or done.stderr).strip().splitlines()[0] if (done.stdout or done.stderr).strip() else f"exit {done.returncode}"


def checks() -> list[Check]:
    from molt.harness.substrate import isolation
    from molt.models.embedded import embedded_gguf_path

    found = []
    sandbox = isolation()
    found.append(Check("action sandbox", sandbox.mode == "bubblewrap", sandbox.describe()))
    bwrap = shutil.which("bwrap")
    found.append(Check("bubblewrap", bwrap is not None, version_of([bwrap, "--version"]) if bwrap else "missing: `make services` installs Debian's bubblewrap"))
    try:
        found.append(Check("embedded model", True, str(embedded_gguf_path())))
    except Exception as e:  # the package missing or broken: say so, do not crash the report
        found.append(Check("embedded model", False, str(e)))
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    found.append(Check("chromium", chromium is not None, version_of([chromium, "--version"]) if chromium else "missing: `make services` installs it (genui bench, browser tests)"))
    initdb = find_bin("initdb")
    found.append(Check("postgresql", initdb is not None, version_of([initdb, "--version"]) if initdb else "missing: the registry uses SQLite; `make services` installs PostgreSQL for its tests"))
    found.append(Check("MOLT_HOME", True, str(molt_home())))
    return found
