"""One generation of ``molt evolve``: discovery, expansion, update, gate.

A generation lives in ``$MOLT_HOME/evolve/<target>/gen-<n>/``. ``state.json`` (written whole,
atomically) holds each finished phase's outputs; a generation that was stopped resumes after its
last finished phase (the update's SFT run resumes from its own last checkpoint), and registry
records are content-addressed and transactional, so a phase run twice records nothing twice. A
generation whose incumbent is no longer ``production`` (a rollback, another promotion) starts
over from the new production: its results would judge the wrong pair.
"""

import json
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from molt.evolve.answering import serving, specialist
from molt.evolve.contract import Contract
from molt.evolve.discovery import discover
from molt.evolve.evaluate import Progress as EvalProgress
from molt.evolve.evaluate import evaluate_pairs
from molt.evolve.expansion import expand, kept_edit
from molt.evolve.gate import PairScores, judge
from molt.evolve.update import collect, write_rows
from molt.experience.log import export
from molt.families import FAMILIES, Case
from molt.hcp import HCP
from molt.home import molt_home, write_atomic
from molt.lora.format import read_adapter
from molt.mint import ServiceClient
from molt.mint.checkpoints import resolve, revision_path
from molt.registry import Entry, Registry
from molt.registry.database import open_database
from molt.registry.pairs import PRODUCTION, by_revision, pair_hcp, register_pair, register_sft
from molt.train.sft import SFTConfig, train_or_resume

ACTOR = "molt evolve"
RL_ENVS = {"agent": "tool_calls", "coding": "unit_tests", "genui": "surfaces"}
"""The RL environment (``molt.forge.envs``) of each target the ``rl`` update can train."""


@dataclass(frozen=True)
class EvolveConfig:
    target: str = "agent"
    bank: int = 48
    """Train-split problems drawn for this generation (a new draw each generation)."""
    search: int = 40
    """Wording-split problems that judge HCP edits (never the contract's suites)."""
    variants_per_case: int = 2
    k: int = 4
    """Samples per problem, to tell whether the pair solves it reliably and to find passing answers."""
    temperature: float = 0.8
    per_problem: int = 2
    """Distinct passing answers kept per problem."""
    max_trials: int = 3
    """HCP edits tried: instructions for the most frequent failure kinds, and a worked example or a tool description."""
    update: str = "sft"
    """``sft``: fine-tune on the collected dataset; ``rl``: ``molt rl`` (GRPO) on the target's
    environment from the served revision. On the embedded agent, one generation of each from the
    same pair: sft +0.044 held-out in 25 min (twice), rl (24 steps) +0.011 in 57 min."""
    learning_rate: float = 1e-3
    """SFT's learning rate (RL uses ``rl_lr``)."""
    epochs: int = 1
    rl_steps: int = 24
    rl_lr: float = 3e-4
    """What moved the agent's held-out reward in `molt rl` (0.30 → 0.39 in 24 steps from the SFT agent)."""
    rl_watch: int = 20
    """Wording-split problems the RL update scores greedily before and after (its progress figure, not the gate's)."""
    mint_url: str | None = None
    """Train the update on this MinT server (``molt mint serve``, the Tinker protocol) instead of in
    this process; it must share $MOLT_HOME's checkpoints folder (the candidate is read from there)."""
    seed: int = 0
    experience_db: str | None = None
    """Where rated deployment turns are read (default: the proxy's database)."""


REHEARSAL_SEED = 500_000
"""Offsets the seed of the train-split draw the update rehearses from, apart from every generation's bank."""

WHERE = {"experience_db": None, "mint_url": None}
"""Config fields that say where things are, not how the generation runs (a resume may change them)."""


@dataclass
class Reporter:
    """Progress callbacks: a phase (or one of its passes) starts with a number of steps; a step is done; a line to show."""

    start: Callable[[str, int], None] = lambda name, total: None
    advance: Callable[[], None] = lambda: None
    note: Callable[[str], None] = lambda text: None


def evolve_root(target: str) -> Path:
    return molt_home() / "evolve" / target


def next_generation(target: str) -> int:
    """The number of the generation to run: the last one if unfinished, else the next."""
    root = evolve_root(target)
    numbers = sorted(int(p.name.removeprefix("gen-")) for p in root.glob("gen-*") if p.name.removeprefix("gen-").isdigit()) if root.is_dir() else []
    if not numbers:
        return 1
    last = read_state(root / f"gen-{numbers[-1]:03d}")
    return numbers[-1] if last is not None and "gate" not in last["phases"] else numbers[-1] + 1


def read_state(folder: Path) -> dict | None:
    path = folder / "state.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def save_state(folder: Path, state: dict) -> None:
    write_atomic(folder / "state.json", json.dumps(state, indent=2, ensure_ascii=False))


def with_kept_edit(incumbent: HCP, target: str, phases: dict) -> HCP:
    """The candidate's harness: the incumbent's, with the edit expansion kept (if any)."""
    kept = kept_edit(phases["expansion"])
    return kept.applied(incumbent, target) if kept else incumbent


def run_generation(registry: Registry, contract: Contract, config: EvolveConfig, number: int, report: Reporter = Reporter(), service: ServiceClient | None = None) -> dict:
    """Run (or resume) generation ``number``; returns its finished state."""
    target = config.target
    if target not in FAMILIES:
        raise ValueError(f"no problem bank for {target!r}; molt evolves {', '.join(FAMILIES)}")
    if config.update == "rl" and target not in RL_ENVS:
        raise ValueError(f"no RL environment for {target!r} (molt has them for {', '.join(RL_ENVS)}): use --update sft")
    contract.suite(target)
    production = registry.resolve_alias(PRODUCTION)
    if production is None:
        raise ValueError("no production pair yet: run `molt specialists bootstrap` (or `molt up`) first")
    folder = evolve_root(target) / f"gen-{number:03d}"
    state = read_state(folder)
    promoted_here = state is not None and state["phases"].get("update", {}).get("pair") == production[0]  # stopped after its own promotion
    if state is not None and not promoted_here and (state["incumbent"] != production[0] or state["contract"] != contract.digest):
        report.note(f"generation {number} was started for {state['incumbent']}; production is now {production[0]}: starting it over")
        shutil.rmtree(folder)
        state = None
    if state is None:
        state = {"generation": number, "target": target, "incumbent": production[0], "contract": contract.digest, "config": asdict(config), "phases": {}}
        save_state(folder, state)
    elif {**state["config"], **WHERE} != {**asdict(config), **WHERE}:  # a generation finishes with the settings it started with
        config = EvolveConfig(**{**state["config"], "experience_db": config.experience_db, "mint_url": config.mint_url})
        report.note(f"generation {number} resumes with the settings it started with: {state['config']}")
    phases = state["phases"]
    incumbent = pair_hcp(registry, state["incumbent"])
    family = FAMILIES[target]
    seed = config.seed * 1000 + number
    bank = family.generate("train", config.bank, seed)
    search = family.generate("wording", config.search, seed)

    if "collected" not in phases:  # the phases that need the incumbent served
        served = by_revision(incumbent)
        with serving(served) as url:
            who = specialist(url, served, target)
            if "discovery" not in phases:
                began = time.monotonic()
                report.start("discovery: sampling variants", len(bank) * config.variants_per_case * config.k)
                found = discover(who, bank, config.variants_per_case, config.k, config.temperature, seed, report.advance)
                write_atomic(folder / "variants.json", json.dumps([{"operator": v.operator, "source": v.source, "case": asdict(v.case)} for v in found.kept], ensure_ascii=False))
                phases["discovery"] = {"proposed": found.proposed, "kept": len(found.kept), "by_operator": dict(Counter(v.operator for v in found.kept)), "seconds": _since(began)}
                save_state(folder, state)
            variants = [Case(**v["case"]) for v in json.loads((folder / "variants.json").read_text(encoding="utf-8"))]
            if "expansion" not in phases:
                began = time.monotonic()
                report.start("expansion: failures and HCP edits", len(bank) + len(search) * (1 + config.max_trials) + len(bank) * config.max_trials)
                result = expand(who, served, target, bank, search, config.max_trials, report.advance)
                phases["expansion"] = {
                    "failures": result.failures, "bank_score": result.bank_score, "search_before": result.search_before,
                    "trials": [asdict(t) for t in result.trials], "kept": asdict(result.kept) if result.kept else None, "seconds": _since(began),
                }
                save_state(folder, state)
            if "collected" not in phases and config.update == "rl":
                phases["collected"] = {"skipped": "the rl update samples and rewards its own groups"}
                save_state(folder, state)
            if "collected" not in phases:
                began = time.monotonic()
                rated = list(export(open_database(config.experience_db), specialist=target, rating="up"))
                report.start("update: sampling trajectories", (len(bank) + len(variants)) * config.k)
                harness = with_kept_edit(incumbent, target, phases)
                pool = family.generate("train", config.bank * 4, seed + REHEARSAL_SEED)
                got = collect(who.under(harness, target), bank, variants, rated, contract, config.k, config.temperature, config.per_problem, report.advance, pool)
                write_rows(folder / "data.jsonl", got.rows)
                phases["collected"] = {"rows": len(got.rows), "solved_problems": got.sampled_ok, "problems": len(bank) + len(variants), "references": got.references, "rehearsed": got.rehearsed, "rated": got.rated, "rated_dropped_overlap": got.dropped_overlap, "seconds": _since(began)}
                save_state(folder, state)
    harness = with_kept_edit(incumbent, target, phases)

    if "update" not in phases:
        began = time.monotonic()
        train = rl_candidate if config.update == "rl" else train_candidate
        phases["update"] = train(registry, harness, state, folder, config, report, service) | {"seconds": _since(began)}
        save_state(folder, state)
    candidate_id = phases["update"]["pair"]

    if "gate" not in phases:
        began = time.monotonic()
        phases["gate"] = gate(registry, contract, target, state["incumbent"], candidate_id, number, report) | {"seconds": _since(began)}
        save_state(folder, state)
    return state


def _since(began: float) -> int:
    """Whole seconds a phase took in the run that finished it (stored in ``state.json``, shown per generation)."""
    return round(time.monotonic() - began)


def train_candidate(registry: Registry, harness: HCP, state: dict, folder: Path, config: EvolveConfig, report: Reporter, service: ServiceClient | None) -> dict:
    """SFT from the incumbent's revision of the target on the collected rows; the candidate pair."""
    target, number = config.target, state["generation"]
    members = registry.get(state["incumbent"]).attributes["members"]
    init_from, rank = _start(harness, target)
    sft = SFTConfig(
        adapter=f"{target}-gen{number:03d}", data=folder / "data.jsonl", base_model=harness.model.base, rank=rank,
        learning_rate=config.learning_rate, epochs=config.epochs, eval_fraction=0.05, save_every=10, seed=config.seed, train_unembed=False, init_from=init_from,
    )
    def started(total: int, first: int, n_train: int, n_eval: int) -> None:
        report.start(f"update: SFT from {init_from.removeprefix('molt://')}", total)
        for _ in range(first):
            report.advance()

    service = service or (ServiceClient(base_url=config.mint_url) if config.mint_url else ServiceClient(dtype="auto"))
    result = train_or_resume(sft, service, on_start=started, on_step=lambda r: report.advance())
    adapter = register_sft(registry, sft, result, source=f"molt evolve generation {number}", data_parents={"made_by": state["incumbent"]})
    return _candidate(registry, harness, members, adapter, target, {"steps": result.steps, "eval_loss_before": result.eval_loss_before, "eval_loss_after": result.eval_loss_after})


def rl_candidate(registry: Registry, harness: HCP, state: dict, folder: Path, config: EvolveConfig, report: Reporter, service: ServiceClient | None) -> dict:
    """``molt rl`` from the incumbent's revision of the target (its environment's train problems,
    watched on the wording split, never the held-out one); the candidate pair."""
    from molt.forge.loop import RLConfig, run_rl
    from molt.forge.session import rl_run

    target, number = config.target, state["generation"]
    if target not in RL_ENVS:
        raise ValueError(f"no RL environment for {target!r} (molt has them for {', '.join(RL_ENVS)}); use the sft update")
    members = registry.get(state["incumbent"]).attributes["members"]
    init_from, rank = _start(harness, target)
    rl = RLConfig(adapter=f"{target}-gen{number:03d}-rl", steps=config.rl_steps, batch=4, oversample=2, group_size=4, lr=config.rl_lr,
                  eval_every=config.rl_steps, checkpoint_every=4, seed=config.seed * 1000 + number)
    report.start(f"update: RL from {init_from.removeprefix('molt://')}", config.rl_steps)
    with rl_run(rl, RL_ENVS[target], harness, harness.model.base, rank, train_size=200, heldout_size=config.rl_watch, mint_url=config.mint_url, folder=folder / "rl",
                start=init_from, monitor_split="wording") as run:
        run.on_step = lambda metrics: report.advance()
        summary = run_rl(run, resume=(folder / "rl" / "progress.json").is_file())
        final = resolve(run.training.save_weights_for_sampler("evolve-final").result())
    base = registry.add_base(harness.model.base)
    start = registry.get(members["specialists"][target])
    adapter = registry.add_trained_adapter(final, rl.adapter, "rl", asdict(rl), summary, {"base": base.id, "started_from": start.id}, start.id)
    return _candidate(registry, harness, members, adapter, target, {"steps": summary["steps"], "wording_before": summary["heldout_before"], "wording_after": summary["heldout_after"]})


def _start(harness: HCP, target: str) -> tuple[str, int]:
    """The served revision of the target as a ``molt://`` path, and its rank."""
    start = harness.specialist(target).revision
    if not start:
        raise ValueError(f"the production pair's {target} specialist has no trained revision to continue from")
    init_from = revision_path(start)
    return init_from, read_adapter(resolve(init_from)).r


def _candidate(registry: Registry, harness: HCP, members: dict, adapter, target: str, figures: dict) -> dict:
    adapters = {label: registry.get(a) for label, a in members["specialists"].items()} | {target: adapter}
    router = registry.get(members["router"]) if members["router"] else None
    pair = register_pair(registry, harness, adapters, router, derived_from=members["hcp"])
    return {"adapter": adapter.id, "revision": adapter.attributes["revision"], "pair": pair.id, **figures}


def known_scores(registry: Registry, contract: Contract, pair: str) -> PairScores | None:
    """A pair's direct results under this contract from an earlier gate (one case at a time, or
    many at a time where both pairs shared them: ``batched``)."""
    for record in reversed(registry.records("evaluation")):
        evidence = record.attributes.get("evidence") or {}
        if evidence.get("contract") != contract.digest:
            continue
        side = "candidate" if record.parents.get("subject") == pair else "incumbent" if record.parents.get("incumbent") == pair else None
        if side:
            results = evidence["per_case"][side]
            return PairScores(results["suites"], batched=results.get("batched", []))
    return None


def recorded_gate(registry: Registry, contract: Contract, incumbent_id: str, candidate_id: str, number: int) -> Entry | None:
    """This generation's evaluation record, when a stopped run wrote it before saving its state."""
    for record in reversed(registry.records("evaluation")):
        evidence = record.attributes.get("evidence") or {}
        if record.parents == {"subject": candidate_id, "incumbent": incumbent_id} and evidence.get("contract") == contract.digest and evidence.get("generation") == number:
            return record
    return None


def gate(registry: Registry, contract: Contract, target: str, incumbent_id: str, candidate_id: str, number: int, report: Reporter) -> dict:
    """Judge the candidate under the contract, store the verdict with its evidence, promote or not.
    Stopped after the record was written, it judges nothing twice: the record decides, and a
    promotion it calls for is made once."""
    record = recorded_gate(registry, contract, incumbent_id, candidate_id, number)
    if record is None:
        record = judged(registry, contract, target, incumbent_id, candidate_id, number, report)
    promote = record.attributes["verdict"].startswith("promote")
    production = registry.resolve_alias(PRODUCTION)
    if promote and (production is None or production[0] != candidate_id):
        registry.move(PRODUCTION, candidate_id, ACTOR, f"generation {number}: {record.attributes['verdict']} ({record.id})")
    return {"evaluation": record.id, "promoted": promote, "reason": record.attributes["verdict"], "checks": record.attributes["evidence"]["checks"]}


def judged(registry: Registry, contract: Contract, target: str, incumbent_id: str, candidate_id: str, number: int, report: Reporter) -> Entry:
    """Both pairs evaluated under the contract; the verdict and its evidence recorded."""
    known = known_scores(registry, contract, incumbent_id)
    progress = EvalProgress(on_suite=lambda name, total: report.start(f"gate: {name}", total), on_case=report.advance)
    before, after = evaluate_pairs(contract, pair_hcp(registry, incumbent_id), pair_hcp(registry, candidate_id), progress, known)
    verdict = judge(contract, target, before, after)
    metrics = {c.name: {"value": c.after, "before": c.before, "low": c.low, "high": c.high, "n": c.n, "passed": c.passed} for c in verdict.checks}
    evidence = {"contract": contract.digest, "contract_name": contract.name, "target": target, "generation": number, "test": contract.test.model_dump(),
                "checks": verdict.to_json()["checks"], "per_case": {"incumbent": before.to_json(), "candidate": after.to_json()}}
    return registry.add_evaluation(f"contract {contract.name}", candidate_id, metrics, verdict.reason, {"incumbent": incumbent_id}, evidence)

