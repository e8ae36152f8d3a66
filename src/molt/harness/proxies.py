"""Tool proxies: the HCP's external services, called by the harness for the model.

- **NoAI fields:** the model sees a schema without them, may not pass them, and gets results with
  them removed at any depth; ``inject`` fills NoAI arguments (tokens, account ids) from the
  environment at call time. Neither the journal nor the logs hold a NoAI value.
- **Exactly once:** a call with side effects carries an idempotency key (from the caller: the
  conversation, turn and call it belongs to). The key is journaled *before* the request goes out
  and sent as ``Idempotency-Key``; a retry of a key the journal shows finished returns the
  recorded result without calling again, and a retry of one that may have gone out (a crash
  between sending and recording) resends the same key, which the service deduplicates.
- **Undo:** a proxy may name a compensating proxy; ``undo(key)`` calls it with the original
  arguments under its own derived key, once, and journals it.
"""

import json
import os
import threading
from pathlib import Path
from typing import Any

import httpx

from molt.harness.substrate.session import ToolCallError
from molt.hcp.v1 import ToolProxy

CRASH_ENV = "MOLT_PROXY_CRASH_AT"
"""Test seam: ``before-send`` or ``after-send`` ends the process there, as a crash would."""


class Journal:
    """Append-only JSON lines, flushed to disk before the step they record goes ahead."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        self.entries: dict[str, dict] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a crash: its step never went ahead
                self.entries[entry["key"]] = entry

    def last(self, key: str) -> dict | None:
        return self.entries.get(key)

    def write(self, entry: dict) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
            self.entries[entry["key"]] = entry


class ProxyRunner:
    def __init__(self, proxies: list[ToolProxy], journal: Journal, client: httpx.Client | None = None):
        self.proxies = {p.name: p for p in proxies}
        self.journal = journal
        self.client = client or httpx.Client()

    def schemas(self) -> list[dict]:
        """The proxies as OpenAI function tools, NoAI fields left out."""
        return [{"type": "function", "function": {"name": p.name, "description": p.description, "parameters": visible_schema(p)}} for p in self.proxies.values()]

    def call(self, name: str, arguments: dict, key: str) -> Any:
        """Run proxy ``name`` for the model: the result it may see. ``key`` names this call for retries."""
        proxy = self.proxies.get(name)
        if proxy is None:
            raise ToolCallError(f"no tool proxy named {name!r}; offered: {', '.join(self.proxies) or 'none'}")
        if not isinstance(arguments, dict):
            raise ToolCallError("arguments must be a JSON object")
        hidden = sorted(f for f in arguments if proxy.fields.get(f) == "noai")
        if hidden:
            raise ToolCallError(f"{', '.join(hidden)} cannot be passed: the harness fills them")
        key = f"{name}:{key}"
        if proxy.side_effect:
            done = self.journal.last(key)
            if done is not None and done["arguments"] != arguments:
                raise ToolCallError(f"{name}: this call's idempotency key was used before with other arguments; not run")
            if done is not None and done["state"] == "done":
                return done["result"]
            if done is None:
                self.journal.write({"key": key, "tool": name, "state": "started", "arguments": arguments})
        return self.send(proxy, arguments, key)

    def send(self, proxy: ToolProxy, arguments: dict, key: str) -> Any:
        crash_point("before-send")
        secrets = {field: os.environ.get(env, "") for field, env in proxy.inject.items()}
        try:
            response = self.client.post(proxy.url, json={**arguments, **secrets}, headers={"Idempotency-Key": key}, timeout=proxy.timeout_s)
        except httpx.HTTPError as e:
            raise ToolCallError(f"{proxy.name} could not be reached: {type(e).__name__}") from None
        crash_point("after-send")
        if response.is_error:
            text = response.text
            for secret in filter(None, secrets.values()):  # before cutting: a cut could leave part of one
                text = text.replace(secret, "[secret]")
            raise ToolCallError(f"{proxy.name} failed: HTTP {response.status_code} {redacted_text(text, proxy)}")
        try:
            result = without_noai(response.json(), proxy)
        except ValueError:
            raise ToolCallError(f"{proxy.name} answered with something other than JSON") from None
        if proxy.side_effect:
            self.journal.write({"key": key, "tool": proxy.name, "state": "done", "arguments": arguments, "result": result})
        return result

    def undo(self, key: str) -> Any:
        """Call the compensating proxy of the journaled call ``key`` (once)."""
        entry = self.journal.last(key)
        if entry is None:
            raise ToolCallError(f"no journaled call {key!r}")
        proxy = self.proxies[entry["tool"]]
        if proxy.compensate is None:
            raise ToolCallError(f"{proxy.name} declares no compensating action")
        return self.call(proxy.compensate, entry["arguments"], f"undo:{key}")


def visible_schema(proxy: ToolProxy) -> dict:
    schema = json.loads(json.dumps(proxy.parameters))
    properties = schema.get("properties", {})
    for field in [f for f in properties if proxy.fields.get(f) == "noai"]:
        del properties[field]
    if "required" in schema:
        schema["required"] = [f for f in schema["required"] if f in properties]
    return schema


def without_noai(value: Any, proxy: ToolProxy) -> Any:
    if isinstance(value, dict):
        return {k: without_noai(v, proxy) for k, v in value.items() if proxy.fields.get(k) != "noai"}
    if isinstance(value, list):
        return [without_noai(v, proxy) for v in value]
    return value


def redacted_text(text: str, proxy: ToolProxy) -> str:
    """An error body as the model may see it: JSON with NoAI fields removed, else the first 200 characters."""
    try:
        return json.dumps(without_noai(json.loads(text), proxy))[:200]
    except ValueError:
        return text[:200]


def crash_point(name: str) -> None:
    if os.environ.get(CRASH_ENV) == name:
        os._exit(70)
