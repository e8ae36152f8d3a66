"""``molt bench replicas``: what a second proxy replica costs a turn, measured in one run.

One engine serves four settings; in each, two scripted conversations (turns that switch
specialists and come back) run at once, each turn sent the moment the previous answer arrives:

- **one proxy**: conversations written to the database in the background (the default);
- **one proxy, replicated**: ``--replicated``, a turn answered once its conversation is committed;
- **two replicas, staying**: two ``--replicated`` proxies on one database, each conversation on one;
- **two replicas, hopping**: the same two, each conversation alternating between them, so every
  turn after the first continues a conversation the other replica stored (read from the
  database, its summaries awaited there).

The load is the same in every setting, so "replicated / one proxy" is the cost of committing
before answering and "hopping / staying" the cost of a turn through the other replica. Each
setting has its own database on one PostgreSQL server (``--db``, else a throwaway local one).
The proxies run in this process, so the figures are the proxy's own work, not process start-up.
"""

import statistics
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass

import httpx
from rich.console import Console

from molt.bench.proxy import CONVERSATION
from molt.bench.report import print_rows
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.local_postgres import create_database, drop_database, postgres_server
from molt.stack import engine_thread

SETTINGS = ("one proxy", "one proxy, replicated", "two replicas, staying", "two replicas, hopping")


@dataclass(frozen=True)
class ReplicaBenchConfig:
    rounds: int = 8
    """Rounds of two concurrent 4-turn conversations per setting."""
    max_tokens: int = 16
    """Short answers, so the proxy's share of a turn shows."""
    db: str | None = None
    """A PostgreSQL server URL (postgresql://user@host:port); None: a throwaway local one."""


@contextmanager
def server_url(db: str | None):
    if db is not None:
        if not db.startswith("postgresql"):
            raise ValueError(f"--db must be a PostgreSQL server URL (postgresql://user@host:port), not {db!r}")
        yield db.rstrip("/")
        return
    try:
        with postgres_server() as url:
            yield url
    except FileNotFoundError as e:
        raise ValueError(f"{e}; or pass --db postgresql://user@host:port") from e


def conversation_seconds(clients: list[httpx.Client]) -> list[float]:
    """One conversation's request-to-answer seconds per turn; turn i goes to ``clients[i % len(clients)]``."""
    seconds, messages = [], []
    for index, text in enumerate(CONVERSATION):
        messages.append({"role": "user", "content": text})
        start = time.perf_counter()
        response = clients[index % len(clients)].post("/v1/chat/completions", json={"model": "molt", "messages": messages})
        seconds.append(time.perf_counter() - start)
        response.raise_for_status()
        messages.append(response.json()["choices"][0]["message"])
    return seconds


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def routes(setting: str, urls: list[str]) -> list[list[str]]:
    """The proxies each of the two conversations' turns go to, in turn."""
    if len(urls) == 1:
        return [urls, urls]
    a, b = urls
    return [[a], [b]] if setting.endswith("staying") else [[a, b], [b, a]]


def run(hcp: HCP, config: ReplicaBenchConfig, console: Console) -> dict:
    """All settings stand up at once; rounds of two conversations take turns across them (one
    warm-up round each first), so drift in the machine's speed falls on every setting alike."""
    measured: dict[str, list[float]] = {s: [] for s in SETTINGS}
    with engine_thread(hcp) as contract, server_url(config.db) as server, ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        contract = contract.model_copy(update={"generation": contract.generation.model_copy(update={"max_tokens": config.max_tokens})})
        plans = {}
        for setting in SETTINGS:
            name = f"molt_bench_{uuid.uuid4().hex[:12]}"
            db = create_database(server, name)
            stack.callback(drop_database, server, name)  # after the proxies using it have stopped
            replicated = setting != "one proxy"
            urls = [stack.enter_context(ServerThread(create_proxy_app(contract, db=db, replicated=replicated))) for _ in range(2 if setting.startswith("two") else 1)]
            plans[setting] = [[stack.enter_context(httpx.Client(base_url=url, timeout=900)) for url in conversation] for conversation in routes(setting, urls)]

        def round_of(setting: str) -> list[float]:
            return [s for seconds in pool.map(conversation_seconds, plans[setting]) for s in seconds]

        for setting in SETTINGS:
            round_of(setting)  # warm-up
        for number in range(config.rounds):
            console.print(f"[dim]round {number + 1}/{config.rounds}: two conversations at once in each setting ...[/]")
            for setting in SETTINGS:
                measured[setting] += round_of(setting)
    medians = {s: statistics.median(v) for s, v in measured.items()}
    result = {
        "config": {**asdict(config), "db": "given" if config.db else "throwaway local PostgreSQL"},
        "turns_per_setting": len(measured["one proxy"]),
        "median_turn_ms": {s: m * 1000 for s, m in medians.items()},
        "p90_turn_ms": {s: percentile(v, 90) * 1000 for s, v in measured.items()},
        "replicated_vs_one_proxy": medians["one proxy, replicated"] / medians["one proxy"],
        "second_replica_vs_first": medians["two replicas, hopping"] / medians["two replicas, staying"],
        "hop_overhead_ms": (medians["two replicas, hopping"] - medians["two replicas, staying"]) * 1000,
    }
    one = medians["one proxy"]
    print_rows(
        f"turn latency through the proxy ({hcp.model.base}, answers ≤ {config.max_tokens} tokens, {result['turns_per_setting']} turns each), ms",
        ["setting", "median", "p90", "vs one proxy"],
        [[s, result["median_turn_ms"][s], result["p90_turn_ms"][s], medians[s] / one] for s in SETTINGS],
        console,
    )
    console.print(
        f"committing before answering: ×{result['replicated_vs_one_proxy']:.3f}; a turn through the other replica vs staying: "
        f"×{result['second_replica_vs_first']:.3f} ({result['hop_overhead_ms']:+.1f} ms median)"
    )
    return result
