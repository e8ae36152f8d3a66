"""Answer cases through an OpenAI chat API (the engine, or the proxy), many at a time.

Every system a bench compares gets the same request for a case: the same messages and tools,
temperature 0 and the family's ``max_tokens``; only ``model`` and the system prompt differ (the
proxy adds its own, the HCP's, so the bench sends none there).
"""

import asyncio
from collections.abc import Callable

import httpx

from molt.families import ALL_FAMILIES, Case


def request_body(model: str, case: Case, system: str | None) -> dict:
    messages = ([{"role": "system", "content": system}] if system else []) + case.messages
    body = {"model": model, "messages": messages, "temperature": 0, "max_tokens": ALL_FAMILIES[case.family].max_tokens}
    return {**body, "tools": case.tools} if case.tools else body


async def _replies(url: str, model: str, cases: list[Case], system: str | None, concurrency: int, on_reply: Callable[[], None]) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient, case: Case) -> dict:
        async with gate:
            response = await client.post("/chat/completions", json=request_body(model, case, system))
        response.raise_for_status()
        on_reply()
        return response.json()

    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=900) as client:
        return await asyncio.gather(*(one(client, case) for case in cases))


def replies(url: str, model: str, cases: list[Case], system: str | None = None, concurrency: int = 16, on_reply: Callable[[], None] = lambda: None) -> list[dict]:
    """The whole chat completion for each case from the OpenAI API at ``url``
    (``http://host:port/v1``), with the proxy's ``molt`` field where there is one; ``on_reply``
    is called as each arrives. ``system`` is sent first (omit it for the proxy, which adds its own)."""
    return asyncio.run(_replies(url, model, cases, system, concurrency, on_reply))


def answers(url: str, model: str, cases: list[Case], system: str | None = None, concurrency: int = 16) -> list[dict]:
    """The assistant message for each case (see ``replies``)."""
    return [reply["choices"][0]["message"] for reply in replies(url, model, cases, system, concurrency)]
