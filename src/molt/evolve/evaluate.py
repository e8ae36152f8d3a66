"""Answering the contract's suites with two pairs side by side.

One engine serves both pairs' adapters, each under a name made from its revision
(``agent-3f2a…``), so the two never share a name whatever they are called in their HCPs. Each
suite's cases go to each specialist directly (its adapter, its system prompt, temperature 0, one
case at a time: a greedy answer depends on what else shares the engine's batch, and a paired test
needs each pair's answers to depend on the pair alone). A specialist whose adapter and prompt are
the same in both pairs answers once, many cases at a time (both pairs get those answers, so the
batch cannot tell them apart); those results are reused later only where the specialist is again
the same in both pairs.

Routing and latency go through each pair's own proxy (model ``molt``), case by case and
alternating which pair goes first, so drift in the machine's load falls on both.
"""

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import httpx

from molt.bench.answers import request_body
from molt.evolve.answering import Specialist, greedy, serving, specialist
from molt.evolve.contract import Contract, suite_cases
from molt.evolve.gate import PairScores
from molt.families import ALL_FAMILIES, Case
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.limits import Limits
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.pairs import by_revision
from molt.registry.database import scratch_database
from molt.stack import with_engine

SHARED_CONCURRENCY = 8
"""Cases in flight when both pairs share a specialist's answers (the engine batches them)."""

ROUTED_MAX_TOKENS = 32
"""Routed turns for latency answer at most this many tokens: the route hop, the prompt and a
fixed answer budget are timed, so a candidate is not charged (or credited) for its answers' length."""


@dataclass
class Progress:
    on_suite: Callable[[str, int], None] = lambda name, total: None
    on_case: Callable[[], None] = lambda: None


def evaluate_pairs(contract: Contract, incumbent: HCP, candidate: HCP, progress: Progress = Progress(), known: PairScores | None = None) -> tuple[PairScores, PairScores]:
    """Both pairs' per-case results. ``known``: the incumbent's direct results measured before
    under this contract (its routing and latency are always measured again, beside the candidate's;
    a suite it answered many at a time is answered again where the candidate's specialist differs)."""
    old, new = by_revision(incumbent), by_revision(candidate)
    with serving(old, new) as url:
        old, new = with_engine(old, url), with_engine(new, url)
        before: dict[str, list[float]] = {}
        after: dict[str, list[float]] = {}
        reused: dict[str, str] = {}
        batched: list[str] = []
        cases_of = {suite.specialist: suite_cases(suite) for suite in contract.suites}
        for suite in contract.suites:
            label, cases = suite.specialist, cases_of[suite.specialist]
            a, b = specialist(url, old, label), specialist(url, new, label)
            shared = a.answers_like(b, cases)
            if known is not None and label in known.suites and (shared or label not in known.batched):
                before[label] = known.suites[label]
                batched += [label] if label in known.batched else []
            else:
                progress.on_suite(f"{label}: incumbent" + (" (shared by both pairs)" if shared else ""), len(cases))
                before[label] = _scores(a, cases, suite.metric, progress, SHARED_CONCURRENCY if shared else 1)
                batched += [label] if shared else []
            if shared:
                after[label] = before[label]
                reused[label] = "same adapter and prompt as the incumbent: answered once"
            else:
                progress.on_suite(f"{label}: candidate", len(cases))
                after[label] = _scores(b, cases, suite.metric, progress, 1)
        routing_cases = [(suite.specialist, case) for suite in contract.suites for case in cases_of[suite.specialist][: contract.routing.cases]]
        progress.on_suite("routing and latency, both pairs", len(routing_cases))
        with scratch_database() as db_a, scratch_database() as db_b:
            with ServerThread(create_proxy_app(old, Limits(), summaries=False, db=db_a)) as proxy_a, ServerThread(create_proxy_app(new, Limits(), summaries=False, db=db_b)) as proxy_b:
                routed_a, routed_b = asyncio.run(_routed_both(proxy_a, proxy_b, routing_cases, progress))
    return (
        PairScores(before, [r for r, _ in routed_a], [t for _, t in routed_a], batched=batched),
        PairScores(after, [r for r, _ in routed_b], [t for _, t in routed_b], reused, batched),
    )


def _scores(who: Specialist, cases: list[Case], metric: str, progress: Progress, concurrency: int) -> list[float]:
    family = ALL_FAMILIES[cases[0].family]
    return [float(family.score(case, message)[metric]) for case, message in zip(cases, greedy(who, cases, progress.on_case, concurrency))]


async def _routed_both(proxy_a: str, proxy_b: str, cases: list[tuple[str, Case]], progress: Progress) -> tuple[list, list]:
    results: dict[str, list[tuple[float, float]]] = {proxy_a: [], proxy_b: []}
    async with httpx.AsyncClient(timeout=900) as client:
        for i, (label, case) in enumerate(cases):
            for proxy in (proxy_a, proxy_b) if i % 2 == 0 else (proxy_b, proxy_a):
                body = request_body("molt", case, None) | {"max_tokens": ROUTED_MAX_TOKENS}
                start = time.perf_counter()
                response = await client.post(f"{proxy}/v1/chat/completions", json=body)
                elapsed = time.perf_counter() - start
                response.raise_for_status()
                results[proxy].append((float(response.json()["molt"]["specialist"] == label), elapsed))
            progress.on_case()
    return results[proxy_a], results[proxy_b]
