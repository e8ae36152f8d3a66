"""``molt bench proxy``: what the route and summary hops cost the user, measured in one run.

The stack (engine + proxy) runs in this process on the chosen model. The same scripted
conversations (turns that switch specialists and come back) run twice through the proxy's
OpenAI API: with summaries written in the background, and with the summary hop turned off.
User-visible latency is request to complete answer, as a client sees it; a simulated user
reads for ``think_seconds`` before the next turn. The proxy's own metrics give each hop's share
of the median turn.
"""

import statistics
import time
from dataclasses import asdict, dataclass

import httpx
from rich.console import Console

from molt.bench.report import print_rows
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread

CONVERSATION = [
    "Hi! What can you help me with today?",
    "Write a Python function that checks whether a number is prime.",
    "Thanks. What is the capital of Japan?",
    "Now make the python function faster for big numbers.",
]


@dataclass(frozen=True)
class ProxyBenchConfig:
    conversations: int = 4
    think_seconds: float = 1.0
    max_tokens: int = 64


def run_conversation(url: str, turns: list[str], think_seconds: float) -> list[float]:
    """One conversation through the proxy (model 'molt'): each turn's request-to-answer seconds."""
    latencies, messages = [], []
    with httpx.Client(base_url=url, timeout=900) as client:
        for text in turns:
            messages.append({"role": "user", "content": text})
            start = time.perf_counter()
            response = client.post("/v1/chat/completions", json={"model": "molt", "messages": messages})
            latencies.append(time.perf_counter() - start)
            response.raise_for_status()
            messages.append(response.json()["choices"][0]["message"])
            time.sleep(think_seconds)
    return latencies


def run_conversations(url: str, config: ProxyBenchConfig) -> list[float]:
    return [s for _ in range(config.conversations) for s in run_conversation(url, CONVERSATION, config.think_seconds)]


def hop_seconds(url: str) -> dict[str, float]:
    """Mean seconds per hop from the proxy's /metrics."""
    sums, counts = {}, {}
    for line in httpx.get(f"{url}/metrics").text.splitlines():
        if line.startswith("molt_proxy_hop_seconds_"):
            name, value = line.rsplit(" ", 1)
            hop = name.split('hop="')[1].rstrip('"}')
            (sums if "_sum{" in name else counts)[hop] = float(value)
    return {hop: sums[hop] / counts[hop] for hop in sums if counts.get(hop)}


def run(hcp: HCP, config: ProxyBenchConfig, console: Console) -> dict:
    with engine_thread(hcp) as contract:
        contract = contract.model_copy(update={"generation": contract.generation.model_copy(update={"max_tokens": config.max_tokens})})
        results = {}
        for summaries in (True, False):
            with scratch_database() as db, ServerThread(create_proxy_app(contract, summaries=summaries, db=db)) as url:
                console.print(f"[dim]{config.conversations} conversations, summaries {'on' if summaries else 'off'} ...[/]")
                latencies = run_conversations(url, config)
                results[summaries] = (statistics.median(latencies), hop_seconds(url))
    on, off = results[True], results[False]
    hops = on[1]
    result = {
        "config": asdict(config),
        "median_turn_s_summaries_on": on[0],
        "median_turn_s_summaries_off": off[0],
        "summary_latency_ratio": on[0] / off[0],
        "route_share": hops.get("route", 0.0) / hops["turn"],
        "summary_wait_share": hops.get("summary_wait", 0.0) / hops["turn"],
        "mean_hop_s": hops,
    }
    print_rows(
        "user-visible turn latency through the proxy (median, s)",
        ["", "summaries on", "summaries off", "on / off"],
        [["median turn", on[0], off[0], result["summary_latency_ratio"]]],
        console,
    )
    console.print(f"route hop {result['route_share']:.1%} of the mean turn; waiting for summaries {result['summary_wait_share']:.1%}")
    return result
