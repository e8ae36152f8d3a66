"""``molt bench substrate``: function calling vs the REPL substrate on multi-step business tasks,
for the base and the agent specialist.

Each task (``molt.families.business``, held-out split by default: a support-desk world whose
functions, names and task kinds the agent never trained on) has one exact answer. Its functions
are served over HTTP by a local service and declared in the HCP as tool proxies, so every system
runs through the real proxy and harness: ``model=agent`` with ``[actions] mode`` fixed to
``function_calling`` or ``repl``, and the agent's adapter present (specialist) or taken away
(base, same prompt and harness). Same settings for all four: temperature 0, the family's
``max_tokens``, ``[actions] max_steps``. Per system and mode: accuracy, model calls per task
(the turns the harness took), tokens per task (prompt + completion, summed over its calls).
"""

import shutil
from collections import Counter
from dataclasses import dataclass

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from rich.console import Console
from rich.progress import Progress

from molt.bench.answers import replies
from molt.bench.genui import without_adapter
from molt.bench.report import print_rows
from molt.families.base import Case, Split
from molt.families.business import FAMILY, MODES, Task, right_answer, tasks, world_of
from molt.families.business_world import World
from molt.hcp import HCP
from molt.hcp.v1 import ToolProxy
from molt.home import molt_home
from molt.http_server import ServerThread
from molt.proxy.limits import Limits
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread

SYSTEMS = ("base", "specialist")
LABEL = "agent"


@dataclass(frozen=True)
class SubstrateBenchConfig:
    tasks: int = 48
    seed: int = 0
    split: Split = "heldout"
    concurrency: int = 8


def world_service(world: World) -> FastAPI:
    """The world's functions over HTTP, as an external service behind tool proxies."""
    app = FastAPI()

    @app.post("/call/{name}")
    async def call(name: str, request: Request) -> JSONResponse:
        return JSONResponse(world.call(name, await request.json()))

    return app


def world_proxies(world: World, url: str) -> list[ToolProxy]:
    return [ToolProxy(name=s["function"]["name"], description=s["function"]["description"], url=f"{url}/call/{s['function']['name']}", parameters=s["function"]["parameters"]) for s in world.schemas]


def variant(hcp: HCP, system: str, mode: str, proxies: list[ToolProxy]) -> HCP:
    """The HCP a system answers under: the world's proxies, the mode fixed, the adapter kept or not."""
    served = without_adapter(hcp, LABEL) if system == "base" else hcp
    tools = served.tools.model_copy(update={"proxies": proxies})
    actions = served.actions.model_copy(update={"mode": mode, "specialists": [LABEL]})
    return served.model_copy(update={"tools": tools, "actions": actions, "name": f"{hcp.name}-bench-substrate-{system}-{mode}"})


def outcome(task: Task, reply: dict, world: World) -> dict:
    message = reply["choices"][0]["message"]
    acted = (reply.get("molt") or {}).get("checks", {}).get("actions", {"model_calls": 1, "executed": 0})
    usage = reply.get("usage") or {}
    text = message.get("content") or ""
    return {
        "kind": task.kind, "right": not message.get("tool_calls") and right_answer(text, task.expected, world), "answer": text[:300],
        "model_calls": acted["model_calls"], "executed": acted["executed"], "tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0),
    }


def run(hcp: HCP, config: SubstrateBenchConfig, console: Console) -> dict:
    if not any(s.label == LABEL and s.adapter for s in hcp.specialists):
        raise ValueError("this HCP has no trained agent specialist; run `molt specialists bootstrap` first")
    if config.tasks < 4:
        raise ValueError("give at least 4 tasks (one per task kind)")
    world, drawn = world_of(config.split), tasks(config.split, config.tasks, config.seed)
    cases = [Case(FAMILY.name, [{"role": "user", "content": t.question}], {"role": "assistant", "content": t.answer}) for t in drawn]
    results: dict[str, dict[str, list[dict]]] = {system: {} for system in SYSTEMS}
    limits = Limits(max_per_client=config.concurrency)
    with ServerThread(world_service(world)) as world_url, engine_thread(hcp) as served, Progress(console=console, transient=True) as progress:
        proxies = world_proxies(world, world_url)
        for system in SYSTEMS:
            for mode in MODES:
                contract = variant(served, system, mode, proxies)
                job = progress.add_task(f"{system}, {mode}: {len(cases)} tasks", total=len(cases))
                try:
                    with scratch_database() as db, ServerThread(create_proxy_app(contract, limits, summaries=False, db=db)) as url:
                        answered = replies(f"{url}/v1", LABEL, cases, concurrency=config.concurrency, on_reply=lambda: progress.advance(job))
                finally:
                    shutil.rmtree(molt_home() / "actions" / contract.name, ignore_errors=True)
                results[system][mode] = [outcome(t, r, world) for t, r in zip(drawn, answered)]
    table = summary(results)
    print_table(table, config, console)
    print_kinds(drawn, results, console)
    return {
        "tasks": len(drawn), "seed": config.seed, "split": config.split, "withheld": FAMILY.withheld, "kinds": dict(Counter(t.kind for t in drawn)),
        "settings": {"temperature": 0, "max_tokens": FAMILY.max_tokens, "max_steps": hcp.actions.max_steps}, "systems": table, "per_task": results,
    }


def summary(results: dict[str, dict[str, list[dict]]]) -> dict[str, dict[str, dict[str, float]]]:
    table: dict = {}
    for system, by_mode in results.items():
        for mode, found in by_mode.items():
            right = [o for o in found if o["right"]]
            table.setdefault(system, {})[mode] = {
                "accuracy": len(right) / len(found),
                "right_without_acting": sum(o["executed"] == 0 for o in right) / len(found),
                "model_calls": mean(o["model_calls"] for o in found),
                "model_calls_when_right": mean(o["model_calls"] for o in right),
                "tokens": mean(o["tokens"] for o in found),
                "actions": mean(o["executed"] for o in found),
            }
    return table


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def print_table(table: dict, config: SubstrateBenchConfig, console: Console) -> None:
    rows = []
    for system in SYSTEMS:
        fc, repl = table[system]["function_calling"], table[system]["repl"]
        rows.append([f"{system}: accuracy", fc["accuracy"], repl["accuracy"], ratio(repl["accuracy"], fc["accuracy"])])
        rows.append([f"{system}: … right with no call (a guess)", fc["right_without_acting"], repl["right_without_acting"], ""])
        rows.append([f"{system}: model calls per task", fc["model_calls"], repl["model_calls"], ratio(repl["model_calls"], fc["model_calls"])])
        rows.append([f"{system}: model calls per solved task", fc["model_calls_when_right"], repl["model_calls_when_right"], ratio(repl["model_calls_when_right"], fc["model_calls_when_right"])])
        rows.append([f"{system}: tokens per task", fc["tokens"], repl["tokens"], ratio(repl["tokens"], fc["tokens"])])
    title = f"{config.split} business tasks ({config.tasks}; temperature 0, max_tokens {FAMILY.max_tokens}, through the proxy's harness)"
    print_rows(title, ["figure", "function calling", "REPL", "REPL / calls"], rows, console)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b else "–"


def print_kinds(drawn: list[Task], results: dict, console: Console) -> None:
    kinds = list(dict.fromkeys(t.kind for t in drawn))
    rows = []
    for kind in kinds:
        row = [kind]
        for system in SYSTEMS:
            for mode in MODES:
                found = [o for o in results[system][mode] if o["kind"] == kind]
                row.append(f"{sum(o['right'] for o in found)}/{len(found)}")
        rows.append(row)
    print_rows("right answers per task kind", ["kind", *(f"{s} {m.replace('function_calling', 'calls')}" for s in SYSTEMS for m in MODES)], rows, console)
