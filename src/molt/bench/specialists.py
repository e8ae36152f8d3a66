"""``molt bench specialists``: does each specialist beat the base on its own kind of work, and does
routing keep that gain?

On each family's held-out split (templates and draws never trained on), three systems answer
the same cases: the base (the engine's base model), the specialist called directly (its
adapter), both under the specialist's own system prompt, and the routed system (``model=molt``
through the proxy, which picks the specialist itself). Scores are the family's
(``molt.evaluate.scoring``): exact tool-call match for agent, tests passing for coding, valid
surface for genui, the rubric for chat.
"""

from dataclasses import dataclass

from rich.console import Console

from molt.bench.report import print_rows
from molt.datagen import FAMILIES
from molt.evaluate.runner import answers
from molt.evaluate.scoring import score, summarise
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.server import create_app as create_proxy_app
from molt.stack import engine_thread


@dataclass(frozen=True)
class SpecialistsBenchConfig:
    per_family: int = 30
    seed: int = 0
    concurrency: int = 16


def scored(family: str, cases, messages) -> dict[str, float]:
    return summarise(family, [score(case, message) for case, message in zip(cases, messages)])


def run(hcp: HCP, config: SpecialistsBenchConfig, console: Console) -> dict:
    trained = [s for s in hcp.specialists if s.adapter and s.label in FAMILIES]
    if not trained:
        raise ValueError("this HCP has no trained specialist with a data family; run `molt specialists bootstrap` first")
    results = {}
    with engine_thread(hcp) as served:
        engine_url = served.model.engine_url
        # single-turn cases: no later turn reads a summary, so the proxy skips writing them
        with ServerThread(create_proxy_app(served, summaries=False)) as proxy:
            proxy_url = f"{proxy}/v1"
            for specialist in trained:
                cases = FAMILIES[specialist.label]("heldout", config.per_family, config.seed)
                system = hcp.system_prompt(specialist.label)
                console.print(f"[dim]{specialist.label}: {len(cases)} held-out cases × base, specialist, routed[/]")
                results[specialist.label] = {
                    "base": scored(specialist.label, cases, answers(engine_url, hcp.model.base, cases, system, config.concurrency)),
                    "specialist": scored(specialist.label, cases, answers(engine_url, specialist.adapter, cases, system, config.concurrency)),
                    "routed": scored(specialist.label, cases, answers(proxy_url, "molt", cases, None, config.concurrency)),
                }
    rows = []
    for label, by_system in results.items():
        for metric in by_system["base"]:
            if metric == "n":
                continue
            base, special, routed = (by_system[s][metric] for s in ("base", "specialist", "routed"))
            rows.append([label, metric, base, special, routed, special - base, routed - special])
    print_rows("specialists on their held-out families (higher is better)", ["family", "metric", "base", "specialist", "routed (molt)", "specialist − base", "routed − specialist"], rows, console)
    return {"per_family": config.per_family, "seed": config.seed, "families": results}
