"""The current pair's specialist answering bank problems through the engine: greedily (one case
at a time, so an answer depends on the pair alone) or sampled (k answers per case, many at a time)."""

import asyncio
import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import httpx

from molt.bench.answers import request_body
from molt.engine.server import create_app as create_engine_app
from molt.families import ALL_FAMILIES, Case
from molt.families.base import Message
from molt.hcp import HCP
from molt.hcp.v1 import Tools
from molt.http_server import ServerThread
from molt.models import load_model
from molt.stack import engine_config


@dataclass(frozen=True)
class Specialist:
    """One specialist of one pair, served: the engine's URL, its model name there, its system
    prompt and the pair's tool settings (its own descriptions of functions)."""

    url: str
    model: str
    system: str
    tools: Tools = field(default_factory=Tools)

    def under(self, hcp: HCP, label: str) -> "Specialist":
        """The same adapter under ``hcp``'s harness (an edited prompt or tool descriptions)."""
        return replace(self, system=hcp.system_prompt(label), tools=hcp.tools)

    def answers_like(self, other: "Specialist", cases: list[Case]) -> bool:
        """Whether ``other`` gets the same requests for ``cases`` (tool descriptions matter only where tools are offered)."""
        return self == other or (replace(self, tools=other.tools) == other and not any(case.tools for case in cases))

    def served(self, case: Case) -> Case:
        """``case`` with its functions described as this pair's harness offers them."""
        return replace(case, tools=self.tools.described(case.tools))

    def body(self, case: Case, temperature: float) -> dict:
        return request_body(self.model, self.served(case), self.system) | {"temperature": temperature}


@contextlib.contextmanager
def serving(*hcps: HCP) -> Iterator[str]:
    """An engine with the base and the adapters of every HCP (of one base); yields its ``/v1`` URL."""
    with ServerThread(create_engine_app(engine_config(*hcps), load_model(hcps[0].model.base))) as url:
        yield f"{url}/v1"


def specialist(url: str, hcp: HCP, label: str) -> Specialist:
    spec = hcp.specialist(label)
    return Specialist(url, spec.adapter or hcp.model.base, hcp.system_prompt(label), hcp.tools)


def score(case: Case, message: Message) -> float:
    return float(ALL_FAMILIES[case.family].score(case, message)["score"])


def greedy(who: Specialist, cases: list[Case], on_case: Callable[[], None] = lambda: None, concurrency: int = 1) -> list[Message]:
    """Temperature-0 answers; one case at a time unless told otherwise, so each depends on ``who`` alone."""
    return asyncio.run(_answers(who, [(case, 0.0) for case in cases], concurrency, on_case))


def sampled(who: Specialist, cases: list[Case], k: int, temperature: float, on_case: Callable[[], None] = lambda: None, concurrency: int = 16) -> list[list[Message]]:
    """``k`` answers per case at ``temperature``."""
    flat = asyncio.run(_answers(who, [(case, temperature) for case in cases for _ in range(k)], concurrency, on_case))
    return [flat[i * k:(i + 1) * k] for i in range(len(cases))]


async def _answers(who: Specialist, jobs: list[tuple[Case, float]], concurrency: int, on_case: Callable[[], None]) -> list[Message]:
    gate = asyncio.Semaphore(concurrency)

    async def one(client: httpx.AsyncClient, case: Case, temperature: float) -> Message:
        async with gate:
            response = await client.post("/chat/completions", json=who.body(case, temperature))
        response.raise_for_status()
        on_case()
        return response.json()["choices"][0]["message"]

    async with httpx.AsyncClient(base_url=who.url, timeout=900) as client:
        return await asyncio.gather(*(one(client, case, t) for case, t in jobs))
