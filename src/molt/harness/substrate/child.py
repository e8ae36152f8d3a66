"""The program a sandboxed session runs (standard library only; started with ``python -I -c``).

It reads one JSON request per line on a private copy of stdin and answers one JSON line on a
private copy of stdout; the model's code sees /dev/null as stdin and a capture file as stdout and
stderr, so a print (or a subprocess's output) lands in the run's output, never in the protocol.

Requests: ``run`` (a notebook cell: its output, the value of a last bare expression, the error),
``snapshot`` (the JSON-safe variables), ``restore`` (set variables), ``define`` (a promoted
tool's code, callable under its name). While a cell runs, the code may ask the host for a tool
proxy call (``call_tool``, ``tools.<name>``), to stage a helper (``save_tool``) or to promote one
(``promote_tool``): the child writes ``{"op": "call", ...}`` and waits for the host's answer.
"""

import ast
import io
import json
import os
import sys
import traceback

REQUESTS = os.fdopen(os.dup(0), "r", encoding="utf-8")
REPLIES = os.fdopen(os.dup(1), "w", encoding="utf-8")
CAPTURE = os.path.join(os.environ.get("TMPDIR", "/tmp"), ".molt-output")
CELL = "<cell>"
MAIN = os.getpid()
REAP = os.environ.get("MOLT_REAP") == "1"
"""In a pid namespace of its own (bubblewrap), every other process left after a run is killed."""

_null = os.open(os.devnull, os.O_RDONLY)
os.dup2(_null, 0)
_out = os.open(CAPTURE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.dup2(_out, 1)
os.dup2(_out, 2)
sys.stdin = open(os.devnull, encoding="utf-8")
sys.stdout = sys.stderr = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), encoding="utf-8", errors="replace", write_through=True)
OUTPUT_LIMIT = int(os.environ.get("MOLT_OUTPUT_BYTES", "65536"))
sources: dict[str, str] = {}
"""Source of each top-level function a cell defined, by name: what ``save_tool`` stages."""


class ToolError(Exception):
    """A host-side tool call failed (the proxy's or the harness's error message)."""


def reply(message: dict) -> None:
    REPLIES.write(json.dumps(message) + "\n")
    REPLIES.flush()


def host(op: str, **fields) -> object:
    reply({"op": op, **fields})
    answer = json.loads(REQUESTS.readline())
    if "error" in answer:
        raise ToolError(answer["error"])
    return answer.get("result")


def call_tool(tool: str, /, **arguments) -> object:
    """Call a function the harness offers (the host runs it; private fields never come back).
    ``tool`` is positional-only, so any argument name (``name`` too) is the function's own."""
    return host("call", name=tool, arguments=arguments)


def save_tool(name: str, cases: list, description: str = "", code: str | None = None) -> object:
    """Stage the function ``name`` defined in an earlier cell (or ``code``) with its reference
    cases, ``[{"args": [...], "expected": ...}, ...]``; ``promote_tool(name)`` validates it."""
    code = code if code is not None else sources.get(name)
    if code is None:
        raise ToolError(f"no function named {name!r} was defined in this session; define it first or pass code=")
    return host("save_tool", name=name, code=code, cases=cases, description=description)


def promote_tool(name: str) -> object:
    """Make a staged helper callable in later sessions, once it passes its cases in a fresh sandbox."""
    return host("promote_tool", name=name)


class Tools:
    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda **arguments: call_tool(name, **arguments)


namespace: dict = {"__name__": "__main__", "call_tool": call_tool, "tools": Tools(), "save_tool": save_tool, "promote_tool": promote_tool, "ToolError": ToolError}
BUILTIN_NAMES = set(namespace)


def captured() -> str:
    sys.stdout.flush()
    with open(CAPTURE, "rb") as f:
        data = f.read(OUTPUT_LIMIT + 1)
    size = os.path.getsize(CAPTURE)
    os.truncate(CAPTURE, 0)
    os.lseek(1, 0, os.SEEK_SET)
    text = data[:OUTPUT_LIMIT].decode("utf-8", errors="replace")
    return text + (f"\n[output cut: {size} bytes, the limit is {OUTPUT_LIMIT}]" if size > OUTPUT_LIMIT else "")


def error_text(error: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == CELL]
    lines = traceback.format_list(frames[-3:]) + traceback.format_exception_only(type(error), error)
    return "".join(lines).strip()


def run(code: str) -> dict:
    value, error = None, None
    try:
        tree = ast.parse(code, CELL)
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        for node in tree.body + ([last] if last else []):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                sources[node.name] = ast.get_source_segment(code, node) or ""
        exec(compile(tree, CELL, "exec"), namespace)
        if last is not None:
            result = eval(compile(ast.Expression(last.value), CELL, "eval"), namespace)
            value = None if result is None else repr(result)[:OUTPUT_LIMIT]
    except BaseException as e:  # SystemExit and KeyboardInterrupt too: the session lives on
        error = error_text(e)
    if os.getpid() != MAIN:  # a process the code forked got here: only the session itself answers
        os._exit(0)
    if REAP:
        reap()
    return {"output": captured(), "value": value, "error": error}


def reap() -> None:
    """Kill every other process in the sandbox and collect the session's own dead children."""
    try:
        os.kill(-1, 9)
    except OSError:
        pass
    while True:
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return


def snapshot() -> dict:
    variables, skipped = {}, []
    for name, value in namespace.items():
        if name.startswith("_") or name in BUILTIN_NAMES:
            continue
        try:
            variables[name] = json.loads(json.dumps(value))
        except (TypeError, ValueError, RecursionError):
            skipped.append(name)
    return {"variables": variables, "skipped": sorted(skipped)}


def define(name: str, code: str) -> dict:
    """A promoted tool: its code runs in its own namespace; a call that raises is reported to the
    host (which demotes the tool) and re-raised to the caller."""
    scope: dict = {"__name__": f"tool_{name}"}
    exec(compile(code, f"<tool {name}>", "exec"), scope)
    function = scope[name]

    def promoted(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception as e:
            host("tool_failed", name=name, error=f"{type(e).__name__}: {e}")
            raise

    promoted.__name__, promoted.__doc__ = name, function.__doc__
    namespace[name] = promoted
    return {}


def main() -> None:
    reply({"op": "ready", "pid": os.getpid()})
    for line in REQUESTS:
        request = json.loads(line)
        op = request["op"]
        if op == "run":
            answer = run(request["code"])
        elif op == "snapshot":
            answer = snapshot()
        elif op == "restore":
            namespace.update(request["variables"])
            answer = {}
        elif op == "define":
            try:
                answer = define(request["name"], request["code"])
            except Exception as e:
                answer = {"error": f"{type(e).__name__}: {e}"}
        else:
            answer = {"error": f"unknown op {op!r}"}
        reply({"op": "done", **answer})


main()
