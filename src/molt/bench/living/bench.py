"""``molt bench living``: the held-out living scenarios, answered by four systems side by side.

- **base**: the frozen base through the engine, under the agent specialist's system prompt;
- **agent**: the agent specialist's adapter through the engine, under the same prompt;
- **routed**: the proxy (``model=molt``): the router picks a specialist each turn;
- **routed + memory**: the same proxy, with each scenario's ``user``, so what the user said in an
  earlier session can come back through molt's per-user memory. Before a new session the bench
  waits until the proxy has written that user's facts (``GET /v1/memory`` waits for them), as a
  user coming back the next day would.

Each system runs every scenario once, several scenarios at a time (the engine batches them).
Decoding is greedy for all four, with the same answer length (the proxy passes the request's
``max_tokens`` through). The routed systems are the proxy as it serves: a call to a function
that was not offered goes back to the specialist as a tool error (``[tools] max_repairs``). The table gives each system's
total, need and process, and the totals on the multi-session and on each noise kind's scenarios;
``--json`` adds every scenario's score and process components.
"""

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import httpx
from rich.console import Console
from rich.progress import Progress

from molt.bench.living.runner import Assistant, Result, run_scenario
from molt.bench.living.scenarios import NOISE_KINDS as NOISE, Scenario, scenarios
from molt.bench.report import print_rows
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread

SYSTEMS = ("base", "agent", "routed", "routed + memory")
RETRIES = 2
"""Tries again after an engine or proxy error of its own (5xx) or a dropped connection."""


@dataclass(frozen=True)
class LivingBenchConfig:
    seed: int = 0
    split: str = "test"
    max_tokens: int = 96
    concurrency: int = 8
    limit: int | None = None
    """Only the first ``limit`` scenarios (a quick look; the table then covers fewer)."""
    systems: tuple[str, ...] = SYSTEMS
    variants: tuple[str, ...] | None = None
    """Only the scenarios of these variants (``scenarios.VARIANTS``), before ``limit``; None: all."""


class ChatClient:
    """An assistant for the runner: one OpenAI chat request per call, greedy."""

    def __init__(self, url: str, model: str, max_tokens: int, system: str | None = None, remember: bool = False):
        self.http = httpx.Client(base_url=url, timeout=900)
        self.model, self.max_tokens, self.system, self.remember = model, max_tokens, system, remember
        self.sessions: dict[str, int] = {}
        self.overflows = 0
        """Requests refused for a prompt longer than the engine's window (answered with nothing):
        the direct systems send the whole session; the proxy fits its views to the window."""

    def __call__(self, messages: list[dict], tools: list[dict], user: str, session: int) -> dict:
        if self.remember and self.sessions.get(user, session) != session:
            self.settle(user)  # the user comes back: what they said last time is written by now
        self.sessions[user] = session
        if self.system:  # the specialist's own prompt first, as the proxy would put it
            messages = [{"role": "system", "content": self.system}, *messages]
        body = {"model": self.model, "messages": messages, "tools": tools, "max_tokens": self.max_tokens, "temperature": 0, **({"user": user} if self.remember else {})}
        for attempt in range(RETRIES + 1):  # a dropped connection under load is not the model's answer
            try:
                response = self.http.post("/chat/completions", json=body)
            except httpx.TransportError:
                if attempt == RETRIES:
                    raise
                time.sleep(1 + attempt)
                continue
            if response.status_code < 500 or attempt == RETRIES:
                break
            time.sleep(1 + attempt)
        if response.status_code == 400 and "max_model_len" in response.text:
            self.overflows += 1  # the conversation outgrew the engine's window: the system cannot go on
            return {"role": "assistant", "content": ""}
        if response.is_error:
            raise RuntimeError(f"{self.model} answered {response.status_code}: {response.text[:400]}")
        return response.json()["choices"][0]["message"]

    def settle(self, user: str) -> None:
        """Wait until the proxy has written the facts of ``user``'s finished turns (its memory
        listing waits for them)."""
        self.http.get("/memory", params={"user": user}).raise_for_status()


def run_system(cases: list[Scenario], assistant: Assistant, seed: int, concurrency: int, progress: Progress, name: str) -> list[Result]:
    task = progress.add_task(name, total=len(cases))

    def one(scenario: Scenario) -> Result:
        result = run_scenario(scenario, assistant, seed)
        progress.advance(task)
        return result

    with ThreadPoolExecutor(concurrency) as pool:
        return list(pool.map(one, cases))


def summary(cases: list[Scenario], results: list[Result]) -> dict:
    def mean(picked: list[float]) -> float | None:
        return statistics.mean(picked) if picked else None

    totals = [r.score.total for r in results]
    return {
        "total": mean(totals), "need": mean([r.score.need for r in results]), "process": mean([r.score.process for r in results]),
        "multi_session": mean([r.score.total for c, r in zip(cases, results) if c.multi_session]),
        "single_session": mean([r.score.total for c, r in zip(cases, results) if not c.multi_session]),
        "noise": {kind: mean([r.score.total for c, r in zip(cases, results) if kind in c.noise]) for kind in NOISE},
        "turns": mean([r.turns for r in results]), "calls": mean([len(r.calls) for r in results]),
    }


def run(hcp: HCP, config: LivingBenchConfig, console: Console) -> dict:
    agent = next((s for s in hcp.specialists if s.label == "agent" and s.adapter), None)
    if agent is None and "agent" in config.systems:
        raise ValueError("this HCP has no trained agent specialist; run `molt specialists bootstrap` first (or leave out the agent system)")
    cases = [c for c in scenarios(config.split, config.seed) if config.variants is None or c.variant in config.variants][: config.limit]
    system = hcp.system_prompt("agent")
    results: dict[str, list[Result]] = {}
    seconds: dict[str, float] = {}
    overflows: dict[str, int] = {}
    with engine_thread(hcp) as served, Progress(console=console, transient=True) as progress:
        engine = served.model.engine_url
        with scratch_database() as db, ServerThread(create_proxy_app(served, db=db)) as proxy:
            clients = {
                "base": lambda: ChatClient(engine, hcp.model.base, config.max_tokens, system),
                "agent": lambda: ChatClient(engine, agent.adapter, config.max_tokens, system),
                "routed": lambda: ChatClient(f"{proxy}/v1", "molt", config.max_tokens),
                "routed + memory": lambda: ChatClient(f"{proxy}/v1", "molt", config.max_tokens, remember=True),
            }
            for name in config.systems:
                start = time.perf_counter()
                client = clients[name]()
                results[name] = run_system(cases, client, config.seed, config.concurrency, progress, name)
                seconds[name] = time.perf_counter() - start
                overflows[name] = client.overflows
                console.print(f"[dim]{name}: {len(cases)} scenarios in {seconds[name]:.0f} s, total {summary(cases, results[name])['total']:.3f}[/]")
    figures = {name: {**summary(cases, rs), "seconds": seconds[name], "context_overflows": overflows[name]} for name, rs in results.items()}
    print_table(cases, figures, console)
    return {
        "config": asdict(config), "scenarios": len(cases), "multi_session": sum(c.multi_session for c in cases), "systems": figures,
        "per_scenario": [
            {"id": c.id, "template": c.template, "variant": c.variant, "multi_session": c.multi_session,
             **{name: {"total": rs[i].score.total, "need": rs[i].score.need, "process": rs[i].score.process, "components": rs[i].score.components,
                       "turns": rs[i].turns, "unsafe": list(rs[i].score.unsafe), "redundant": rs[i].score.redundant} for name, rs in results.items()}}
            for i, c in enumerate(cases)
        ],
    }


def print_table(cases: list[Scenario], figures: dict[str, dict], console: Console) -> None:
    def shown(value: float | None) -> str:
        return "–" if value is None else f"{value:.3f}"

    multi = sum(c.multi_session for c in cases)
    print_rows(f"living scenarios ({len(cases)}, {multi} across sessions): total = 0.7 need + 0.3 process",
               ["system", "total", "need", "process", "multi-session", "single", "s"],
               [[name, shown(f["total"]), shown(f["need"]), shown(f["process"]), shown(f["multi_session"]), shown(f["single_session"]), f"{f['seconds']:.0f}"]
                for name, f in figures.items()], console)
    print_rows("total on each noise kind's scenarios", ["system", *(k.replace("_", " ") for k in NOISE)],
               [[name, *(shown(f["noise"][kind]) for kind in NOISE)] for name, f in figures.items()], console)
