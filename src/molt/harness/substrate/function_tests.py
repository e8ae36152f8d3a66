"""Run a model's code answer against a family's tests in a fresh sandbox of the action substrate.

The answer never sees the expected outputs, and nothing it does in its own process can make a
test pass:

1. **Load:** the child (``python -I`` in a fresh workspace of ``molt.harness.substrate``: the
   operating system's isolation, CPU-time, memory, process and file-size limits, a wall clock)
   runs the answer as a module with its own stdout and stderr sent to /dev/null.
2. **Run:** the child calls the function on each test's arguments and writes each result as
   JSON on a private copy of stdout, then a sentinel line with a nonce it read before loading.
3. **Judge (here, in the parent):** pass only when the child exited 0, wrote every result and
   the sentinel last, and every result equals the expected value after the same JSON round
   trip. ``SystemExit`` or ``os._exit`` before the results, an object whose ``__eq__`` always
   says yes (not JSON), or patched ``assert`` helpers all fail: the comparison is not the
   child's to make.
"""

import json
import secrets
from typing import Any

from molt.harness.substrate.isolation import Limits
from molt.harness.substrate.once import run_program

LIMITS = Limits(cpu_s=5, memory_bytes=512 * 1024 * 1024, processes=16, wall_s=10, file_bytes=1 << 20)
HARNESS = r'''
import json, os, runpy, sys
nonce, function, calls = json.loads(sys.stdin.readline())
report = os.fdopen(os.dup(1), "w")
quiet = os.open(os.devnull, os.O_WRONLY)
os.dup2(quiet, 1)
os.dup2(quiet, 2)
try:
    target = runpy.run_path("solution.py", run_name="solution")[function]
    for args in calls:
        report.write(json.dumps(target(*args)) + "\n")
except BaseException:
    sys.exit(3)
report.write("done " + nonce + "\n")
report.flush()
'''


def run_tests(code: str, function: str, tests: list[dict[str, Any]]) -> bool:
    """True when ``function`` of ``code`` returns each test's ``expected`` for its ``args``."""
    nonce = secrets.token_hex(8)
    stdin = json.dumps([nonce, function, [t["args"] for t in tests]]) + "\n"
    done = run_program({"solution.py": code, "harness.py": HARNESS}, "harness.py", stdin, LIMITS)
    if done is None:
        return False
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) != len(tests) + 1 or lines[-1] != f"done {nonce}":
        return False
    try:
        results = [json.loads(line) for line in lines[:-1]]
    except json.JSONDecodeError:
        return False
    return all(result == json.loads(json.dumps(t["expected"])) for result, t in zip(results, tests))
