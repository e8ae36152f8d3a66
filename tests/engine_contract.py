"""The recorded contract of an engine's OpenAI server (``engine_contract/vllm-0.11.0.json``) and
the check an engine passes against it: each exchange's request, sent with its placeholders
filled, must answer with the recorded status and kind of body (JSON, plain text, SSE ending in
``[DONE]``), and every field molt relies on (``relied_on``) with the recorded JSON type. SSE
answers must hold the recorded kinds of chunk (role, content, tool call, finish, usage)."""

import json
from pathlib import Path

import httpx

RECORDING = Path(__file__).parent / "engine_contract" / "vllm-0.11.0.json"


def recording() -> dict:
    return json.loads(RECORDING.read_text())


def fill(value, names: dict[str, str]):
    """``value`` with each ``{name}`` in its strings replaced."""
    if isinstance(value, str):
        for key, text in names.items():
            value = value.replace("{" + key + "}", text)
        return value
    if isinstance(value, list):
        return [fill(v, names) for v in value]
    if isinstance(value, dict):
        return {k: fill(v, names) for k, v in value.items()}
    return value


def exchange(name: str) -> dict:
    return next(e for e in recording()["exchanges"] if e["name"] == name)


def json_type(value) -> str:
    return {type(None): "null", bool: "bool", int: "number", float: "number", str: "string", list: "array", dict: "object"}[type(value)]


def at(body, path: str) -> list:
    """The values at a dotted path, ``[]`` stepping into every element of a list; a missing
    field (or an empty list where one element is expected) raises KeyError."""
    values = [body]
    for part in path.split("."):
        many = part.endswith("[]")
        key = part.removesuffix("[]")
        found = []
        for value in values:
            if not isinstance(value, dict) or key not in value:
                raise KeyError(path)
            value = value[key]
            if many:
                if not isinstance(value, list) or not value:
                    raise KeyError(path)
                found.extend(value)
            else:
                found.append(value)
        values = found
    return values


def field_problems(recorded, live, paths: list[str], where: str = "") -> list[str]:
    problems = []
    for path in paths:
        try:
            want = {json_type(v) for v in at(recorded, path)}
        except KeyError:
            continue  # a path of another kind of chunk
        try:
            got = {json_type(v) for v in at(live, path)}
        except KeyError:
            problems.append(f"{where}{path}: missing")
            continue
        if "null" not in want and not got <= want:  # where vLLM may send null, anything goes
            problems.append(f"{where}{path}: {sorted(got)} where vLLM sends {sorted(want)}")
    return problems


def chunk_kind(chunk: dict) -> str:
    if not chunk.get("choices"):
        return "usage" if chunk.get("usage") else "empty"
    choice = chunk["choices"][0]
    delta = choice.get("delta") or {}
    if choice.get("finish_reason"):
        return "finish"
    if delta.get("tool_calls"):
        return "tool"
    if "role" in delta:
        return "role"
    return "content" if delta.get("content") else "empty"


def sse_chunks(text: str) -> list[dict | str]:
    return [line[len("data: "):] if line == "data: [DONE]" else json.loads(line[len("data: "):]) for line in text.splitlines() if line.startswith("data: ")]


def problems(recorded: dict, response: httpx.Response) -> list[str]:
    """What in ``response`` breaks the recorded exchange (empty: it conforms)."""
    want = recorded["response"]
    if response.status_code != want["status"]:
        return [f"status {response.status_code} where vLLM answers {want['status']}: {response.text[:200]}"]
    if want["kind"] == "text":
        return [] if response.text.startswith("Success") else [f"text {response.text[:80]!r} where vLLM answers 'Success: …'"]
    if want["kind"] == "json":
        try:
            body = response.json()
        except ValueError:
            return [f"not JSON: {response.text[:200]!r}"]
        return field_problems(want["body"], body, recorded["relied_on"])
    chunks = sse_chunks(response.text)
    if not chunks or chunks[-1] != "[DONE]":
        return ["the stream does not end with data: [DONE]"]
    live = [c for c in chunks[:-1] if isinstance(c, dict)]
    found = []
    for kind in dict.fromkeys(chunk_kind(c) for c in want["body"]):
        of_kind = [c for c in live if chunk_kind(c) == kind]
        if not of_kind:
            found.append(f"no {kind} chunk in the stream")
            continue
        sample = next(c for c in want["body"] if chunk_kind(c) == kind)
        for chunk in of_kind:
            found += field_problems(sample, chunk, ["id", "object", "model", *recorded["relied_on"]], f"{kind} chunk: ")
    return found


def send(client: httpx.Client, recorded: dict) -> httpx.Response:
    request = recorded["request"]
    return client.request(request["method"], request["path"], json=request.get("json"))


def run_contract(base_url: str, names: dict[str, str], requests: dict[str, dict] | None = None) -> dict[str, list[str]]:
    """Every exchange of the recording, in order, against the server at ``base_url`` (its root);
    name → problems. ``requests``: fields of an exchange's request body to send instead (a
    conversation the engine under test answers in the recorded way)."""
    results = {}
    with httpx.Client(base_url=base_url, timeout=120) as client:
        for recorded in recording()["exchanges"]:
            recorded = fill(recorded, names)
            if recorded["name"] in (requests or {}):
                recorded["request"]["json"] = {**recorded["request"]["json"], **requests[recorded["name"]]}
            results[recorded["name"]] = problems(recorded, send(client, recorded))
    return results
