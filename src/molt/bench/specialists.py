"""``molt bench specialists``: does each specialist beat the base on its own kind of work, and does
routing keep that gain?

On each family's ``heldout`` split (functions, task kinds, entities and facts never trained on)
and, reported separately, its ``wording`` split (the trained things asked in new words), three
systems answer the same cases with the same settings (temperature 0, the family's
``max_tokens``): the base (the engine's base model) and the specialist called directly (its
adapter), both under the specialist's own system prompt, and the routed system (``model=molt``
through the proxy, which picks the specialist itself and honours the client's ``max_tokens``
and ``temperature``). Scores are the family's (``molt.families``).
"""

from dataclasses import dataclass, replace

from rich.console import Console

from molt.bench.answers import answers
from molt.bench.report import print_rows
from molt.families import FAMILIES, Split
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.limits import Limits
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread

SYSTEMS = ("base", "specialist", "routed")


@dataclass(frozen=True)
class SpecialistsBenchConfig:
    per_family: int = 30
    seed: int = 0
    concurrency: int = 16
    splits: tuple[Split, ...] = ("heldout", "wording")
    families: tuple[str, ...] = ()
    """Only these families (labels); empty means every trained one."""


def scored(label: str, cases, messages) -> dict[str, float]:
    family = FAMILIES[label]
    return family.summarise([family.score(case, message) for case, message in zip(cases, messages)])


def run(hcp: HCP, config: SpecialistsBenchConfig, console: Console) -> dict:
    trained = [s for s in hcp.specialists if s.adapter and s.label in FAMILIES]
    if not trained:
        raise ValueError("this HCP has no trained specialist with a data family; run `molt specialists bootstrap` first")
    if config.families:
        missing = sorted(set(config.families) - {s.label for s in trained})
        if missing:
            raise ValueError(f"no trained specialist for {', '.join(missing)} in this HCP; it has {', '.join(s.label for s in trained)}")
        trained = [s for s in trained if s.label in config.families]
    results: dict[str, dict[str, dict]] = {split: {} for split in config.splits}
    with engine_thread(hcp) as served:
        engine_url = served.model.engine_url
        # single-turn cases: no later turn reads a summary, so the proxy skips writing them
        with scratch_database() as db, ServerThread(create_proxy_app(served, Limits(max_per_client=config.concurrency), summaries=False, db=db)) as proxy:
            for split in config.splits:
                for specialist in trained:
                    cases = FAMILIES[specialist.label].generate(split, config.per_family, config.seed)
                    system = hcp.system_prompt(specialist.label)
                    direct = [replace(c, tools=hcp.tools.described(c.tools)) for c in cases]  # as the proxy offers them
                    console.print(f"[dim]{specialist.label}: {len(cases)} {split} cases × base, specialist, routed[/]")
                    results[split][specialist.label] = {
                        "base": scored(specialist.label, cases, answers(engine_url, hcp.model.base, direct, system, config.concurrency)),
                        "specialist": scored(specialist.label, cases, answers(engine_url, specialist.adapter, direct, system, config.concurrency)),
                        "routed": scored(specialist.label, cases, answers(f"{proxy}/v1", "molt", cases, None, config.concurrency)),
                    }
    for split, by_label in results.items():
        print_table(split, by_label, console)
    settings = {"temperature": 0, "max_tokens": {s.label: FAMILIES[s.label].max_tokens for s in trained}}
    return {"per_family": config.per_family, "seed": config.seed, "settings": settings, "splits": results,
            "withheld": {s.label: FAMILIES[s.label].withheld for s in trained}}


def print_table(split: str, by_label: dict[str, dict], console: Console) -> None:
    rows = []
    for label, by_system in by_label.items():
        for metric in by_system["base"]:
            if metric == "n":
                continue
            base, special, routed = (by_system[s][metric] for s in SYSTEMS)
            rows.append([label, metric, base, special, routed, special - base, routed - special])
    title = f"specialists on the {split} split (higher is better; temperature 0, each family's max_tokens on every side)"
    print_rows(title, ["family", "metric", "base", "specialist", "routed (molt)", "specialist − base", "routed − specialist"], rows, console)
