"""Run untrusted Python (a model's code answer plus its tests) in a separate, limited process.

The child is ``python -I`` (isolated: no user site, no environment-driven imports) in an empty
temporary working directory, with CPU-time, memory and file-size limits and a wall-clock
timeout; only its exit status is read. It is a guard against accidents (loops, huge
allocations), not a security boundary for hostile code.
"""

import resource
import subprocess
import sys
import tempfile

TIMEOUT_S = 5
MEMORY_BYTES = 512 * 1024 * 1024


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (TIMEOUT_S, TIMEOUT_S))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))


def passes(code: str, tests: list[str]) -> bool:
    """True when ``code`` followed by the ``tests`` (assert lines) exits cleanly."""
    program = code + "\n\n" + "\n".join(tests) + "\n"
    with tempfile.TemporaryDirectory() as workdir:
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", program], cwd=workdir, capture_output=True, timeout=TIMEOUT_S * 2, preexec_fn=_limits, stdin=subprocess.DEVNULL
            )
        except subprocess.TimeoutExpired:
            return False
    return done.returncode == 0
