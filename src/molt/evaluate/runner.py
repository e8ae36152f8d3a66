"""Answer held-out cases through an OpenAI chat API (the engine, or the proxy), many at a time."""

import asyncio

import httpx

from molt.datagen.common import Case

MAX_TOKENS = {"chat": 64, "agent": 128, "coding": 192, "genui": 320}
"""Room for the reference answers of each family, with margin; longer answers are cut there."""


async def _answers(url: str, model: str, cases: list[Case], system: str | None, concurrency: int) -> list[dict]:
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient, case: Case) -> dict:
        messages = ([{"role": "system", "content": system}] if system else []) + case.messages
        body = {"model": model, "messages": messages, "temperature": 0, "max_tokens": MAX_TOKENS.get(case.family, 256)}
        if case.tools:
            body["tools"] = case.tools
        async with gate:
            response = await client.post("/chat/completions", json=body)
        response.raise_for_status()
        return response.json()["choices"][0]["message"]

    async with httpx.AsyncClient(base_url=url.rstrip("/"), timeout=900) as client:
        return await asyncio.gather(*(one(client, case) for case in cases))


def answers(url: str, model: str, cases: list[Case], system: str | None = None, concurrency: int = 16) -> list[dict]:
    """The assistant message for each case from the OpenAI API at ``url`` (``http://host:port/v1``);
    ``system`` is sent first (omit it for the proxy, which adds its own)."""
    return asyncio.run(_answers(url, model, cases, system, concurrency))
