"""``molt specialists bootstrap``: train the HCP's specialists and router, and write the HCP that
serves them.

For every specialist whose label has a data family: generate its train split, write it as chat
JSONL under ``$MOLT_HOME/specialists/data``, fine-tune an adapter with MinT SFT (the family's
recipe), and record the revision. Then train the router on the families' requests and
the HCP's examples. The result is a new HCP file, ``$MOLT_HOME/specialists/<name>.toml``, with
adapters, revisions and ``router.kind = "classifier"``; the input HCP is never edited. An
interrupted bootstrap resumes each unfinished adapter from its last checkpoint, and keeps the
adapters it finished (same recipe, same data).

Everything is registered (``molt.registry``): each specialist's dataset, training job and adapter
revision, the router, and the (model, harness) pair, whose HCP serves every file from the
content store. The pair becomes ``production`` when there is none yet, else ``candidate``.
"""

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from molt.families import ALL_FAMILIES, FAMILIES, TRAINED_WITH, Recipe
from molt.hcp import HCP, to_toml
from molt.home import molt_home, replace_folder, write_atomic
from molt.mint import ServiceClient
from molt.registry import Entry, Registry
from molt.registry.pairs import PRODUCTION, adapter_for_revision, pair_hcp, register_pair, register_sft
from molt.router.training import RouterRecipe, train_from_families
from molt.train.sft import SFTConfig, SFTResult, train_or_resume


@dataclass(frozen=True)
class Bootstrapped:
    hcp: HCP
    """The HCP that serves the pair (adapters and router from the content store)."""
    path: Path
    """Where that HCP was also written, ``$MOLT_HOME/specialists/<name>.toml``."""
    pair: Entry
    alias: str
    """The alias moved to the pair: ``production`` on the first bootstrap, else ``candidate``."""


@dataclass(frozen=True, kw_only=True)
class Progress:
    """Callbacks: a specialist starts (label, steps), makes a step (label, step, loss), is trained
    (label, revision), the router is trained (report)."""

    on_specialist: Callable[[str, int], None] = lambda label, steps: None
    on_step: Callable[[str, int, float], None] = lambda label, step, loss: None
    on_trained: Callable[[str, str], None] = lambda label, revision: None
    on_router: Callable[[dict], None] = lambda report: None


def bootstrapped_path(hcp: HCP) -> Path:
    return molt_home() / "specialists" / f"{hcp.name}.toml"


def router_folder(hcp: HCP) -> str:
    """Relative to $MOLT_HOME, so the written HCP moves with the home folder."""
    return f"routers/{hcp.name}"


def write_data(hcp: HCP, label: str, recipe: Recipe, seed: int) -> Path:
    """The family's train split as chat JSONL. Every other finished turn (not one that waits on
    tool results) goes on with the HCP's summary request and a short summary, so the adapter
    also learns the proxy's summary hop: trained only on its own format, it would answer that
    request with more of the format, slowly. Families the specialist is also trained with
    (``TRAINED_WITH``) add their own train split, each at its recipe's size times ``recipe.extras``."""
    family = FAMILIES[label]
    cases = family.generate("train", recipe.examples, seed, **recipe.options)
    extras = [extra for extra in TRAINED_WITH.get(label, ()) if round(extra.recipe.examples * recipe.extras)]
    for extra in extras:
        cases += extra.generate("train", round(extra.recipe.examples * recipe.extras), seed, **extra.recipe.options)
    if extras:
        random.Random(seed).shuffle(cases)
    path = molt_home() / "specialists" / "data" / f"{label}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    system = hcp.system_prompt(label)
    rows = []
    for i, case in enumerate(cases):
        row = case.training_row(system)
        if i % 2 == 0 and not case.answer.get("tool_calls"):
            row["messages"] += [{"role": "user", "content": hcp.prompts.summary}, {"role": "assistant", "content": ALL_FAMILIES[case.family].summary_of(case)}]
        rows.append(json.dumps(row, ensure_ascii=False) + "\n")
    return write_atomic(path, "".join(rows))


def train_specialist(hcp: HCP, label: str, recipe: Recipe, service: ServiceClient, progress: Progress, seed: int) -> tuple[SFTConfig, SFTResult]:
    config = SFTConfig(
        adapter=label, data=write_data(hcp, label, recipe, seed), base_model=hcp.model.base, rank=recipe.rank,
        learning_rate=recipe.learning_rate, epochs=recipe.epochs, batch_tokens=recipe.batch_tokens, eval_fraction=0.05, save_every=10, seed=seed,
        train_unembed=False,  # formats and facts live in the body; the unembedding LoRA costs time and memory
    )
    return config, train_or_resume(  # an earlier, interrupted start resumes; a finished one is kept
        config, service,
        on_start=lambda total, first, n_train, n_eval: progress.on_specialist(label, total),
        on_step=lambda report: progress.on_step(label, report.step, report.loss),
    )


def bootstrap(
    hcp: HCP, labels: list[str] | None = None, service: ServiceClient | None = None, progress: Progress = Progress(), seed: int = 0,
    recipes: dict[str, Recipe] | None = None, router: RouterRecipe = RouterRecipe(), registry: Registry | None = None,
) -> Bootstrapped:
    """Train, register, and write the HCP that serves the trained specialists and router.
    ``labels`` limits which specialists are trained (the others keep the adapters ``hcp`` names);
    ``recipes`` overrides the families' recipes; ``router`` sizes the router's training (its
    defaults: what ``molt up`` ships)."""
    recipes = {**{name: family.recipe for name, family in FAMILIES.items()}, **(recipes or {})}
    service = service or ServiceClient(dtype="auto")
    registry = registry or Registry()
    chosen = [s.label for s in hcp.specialists if s.label in FAMILIES and (labels is None or s.label in labels)]
    adapters: dict[str, Entry] = {}
    for specialist in hcp.specialists:
        if specialist.label in chosen:
            config, result = train_specialist(hcp, specialist.label, recipes[specialist.label], service, progress, seed)
            adapters[specialist.label] = register_sft(registry, config, result, source=f"family:{specialist.label}")
            progress.on_trained(specialist.label, adapters[specialist.label].attributes["revision"])
        elif specialist.adapter and specialist.revision:  # trained before: keeps its revision
            adapters[specialist.label] = adapter_for_revision(registry, specialist.adapter, specialist.revision)
    trained_router = train_from_families(hcp, seed, router)
    progress.on_router(trained_router.info)
    folder = molt_home() / router_folder(hcp)
    replace_folder(folder, trained_router.save)
    base = registry.add_base(hcp.model.base)
    router_record = registry.add_router(folder, f"{hcp.name} router", trained_router.info, {"base": base.id})
    pair = register_pair(registry, hcp, adapters, router_record)
    alias = "candidate" if registry.resolve_alias(PRODUCTION) else PRODUCTION
    registry.move(alias, pair.id, "molt specialists bootstrap", f"bootstrap of {', '.join(chosen) or 'no specialist'}")
    trained = pair_hcp(registry, pair.id)
    return Bootstrapped(trained, write_atomic(bootstrapped_path(hcp), to_toml(trained)), pair, alias)
