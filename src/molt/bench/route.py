"""``molt bench route``: how often the HCP's router picks the right specialist on requests it was
never trained on, and what routing and summaries cost the user.

1. **Accuracy:** the router the HCP selects (guardrails included) routes two held-out sets,
   reported separately: the families' held-out turns, and the outside-style corpus's
   domain/style-held-out turns (other domains, languages and registers, their own functions,
   multi-turn); accuracy, per-class accuracy and the confusion matrix of each. The top-level
   figures are the families'; ``outside`` holds the corpus's.
2. **Latency:** the whole stack (engine + proxy, summaries on) answers conversations that
   switch specialist every turn, made of held-out requests, with a simulated user who reads for
   ``think_seconds``. The route hop's and the summary wait's mean seconds (proxy metrics) are
   reported as shares of the median user-visible turn latency (request to complete answer).
"""

import asyncio
import statistics
import time
from dataclasses import asdict, dataclass

import httpx
from rich.console import Console

from molt.bench.proxy import hop_seconds, run_conversation
from molt.bench.report import print_rows
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.models import load_tokenizer
from molt.models.renderer import get_renderer
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.router import RouteRequest, make_router
from molt.router.training import RoutingSet, accuracy_report, heldout_sets
from molt.stack import engine_thread


@dataclass(frozen=True)
class RouteBenchConfig:
    per_label: int = 150
    """Held-out turns per label for accuracy, in each held-out set."""
    conversations: int = 3
    turns: int = 8
    think_seconds: float = 2.0
    seed: int = 0


SET_TITLES = {"heldout": "families' held-out", "outside": "outside-style, domain/style-held-out"}


async def labelled(hcp: HCP, requests: list[RouteRequest]) -> list[str]:
    async with httpx.AsyncClient(base_url=hcp.model.engine_url.rstrip("/"), timeout=600) as engine:
        router = make_router(hcp, get_renderer(load_tokenizer(hcp.model.base), hcp.tools.call_format), engine)
        return [(await router.route(request)).label for request in requests]


def heldout_requests(hcp: HCP, per_label: int, seed: int) -> dict[str, RoutingSet]:
    sets = heldout_sets(hcp, per_label, seed)
    if "heldout" not in sets:
        raise ValueError("no held-out requests: none of this HCP's labels has a data family")
    return sets


def evaluate_router(hcp: HCP, per_label: int, seed: int = 0, console: Console | None = None) -> dict:
    """Accuracy of the HCP's router on both held-out sets (an engine is started only for label
    scoring, which needs one); prints each confusion matrix when given a console."""
    sets = heldout_requests(hcp, per_label, seed)
    if hcp.router.kind == "label_scoring":
        with engine_thread(hcp) as served:
            return _evaluate(served, sets, console)
    return _evaluate(hcp, sets, console)


def _evaluate(hcp: HCP, sets: dict[str, RoutingSet], console: Console | None) -> dict:
    """The families' report at the top level, each other set's under its name."""
    reports = {name: _score(hcp, name, held, console) for name, held in sets.items()}
    top = reports.pop("heldout")
    return {"router": hcp.router.kind, **top, **reports}


def _score(hcp: HCP, name: str, held: RoutingSet, console: Console | None) -> dict:
    start = time.perf_counter()
    predicted = asyncio.run(labelled(hcp, held.requests))
    report = accuracy_report(held.labels, predicted, [s.label for s in hcp.specialists])
    report["route_ms_per_request"] = (time.perf_counter() - start) / len(held) * 1000
    if console is not None:
        labels = list(report["per_class"])
        title = f"{SET_TITLES.get(name, name)} routing ({hcp.router.kind}): accuracy {report['accuracy']:.1%} over {report['n']} turns"
        print_rows(title, ["truth \\ routed", *labels, "accuracy"], [[t, *[report["confusion"][t][p] for p in labels], report["per_class"][t]] for t in labels], console)
    return report


def conversation_turns(texts: list[str], labels: list[str], config: RouteBenchConfig, index: int) -> list[str]:
    """Turns that change label every time: one request per label in turn, starting at ``index``."""
    by_label = {label: [t for t, l in zip(texts, labels) if l == label] for label in dict.fromkeys(labels)}
    order = list(by_label)
    turns = []
    for turn in range(config.turns):
        requests = by_label[order[(index + turn) % len(order)]]
        turns.append(requests[(index * config.turns + turn) % len(requests)])
    return turns


def run(hcp: HCP, config: RouteBenchConfig, console: Console) -> dict:
    sets = heldout_requests(hcp, config.per_label, config.seed)
    texts, truth = [r.text for r in sets["heldout"].requests], sets["heldout"].labels
    with engine_thread(hcp) as served:
        console.print(f"[dim]routing {sum(map(len, sets.values()))} held-out turns with the {hcp.router.kind} router ...[/]")
        report = _evaluate(served, sets, console)
        latencies = []
        with scratch_database() as db, ServerThread(create_proxy_app(served, db=db)) as url:
            console.print(f"[dim]{config.conversations} conversations × {config.turns} turns, think {config.think_seconds} s ...[/]")
            for index in range(config.conversations):
                latencies += run_conversation(url, conversation_turns(texts, truth, config, index), config.think_seconds)
            hops = hop_seconds(url)
    median = statistics.median(latencies)
    result = {
        "config": asdict(config), **report,
        "median_turn_s": median,
        "route_share": hops.get("route", 0.0) / median,
        "summary_share": hops.get("summary_wait", 0.0) / median,
        "mean_hop_s": hops,
    }
    print_rows("route and summary hops vs the median user-visible turn", ["median turn (s)", "route (s)", "route share", "summary wait (s)", "summary share", "route + summary"],
               [[median, hops.get("route", 0.0), result["route_share"], hops.get("summary_wait", 0.0), result["summary_share"], result["route_share"] + result["summary_share"]]], console)
    return result
