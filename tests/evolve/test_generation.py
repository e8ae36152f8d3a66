"""One generation of ``molt evolve`` end to end on the tiny model: every phase runs, a stop
resumes after the last finished phase, nothing half-written, and the verdict with its evidence
lands in the registry's lineage. (Whether a generation *improves* anything is measured on the
embedded model by ``molt evolve`` itself; the tiny model only exercises the machinery.)"""

import json
import shutil

import httpx
import pytest

import molt.evolve.generation as generation
from molt.evolve.contract import parse_contract
from molt.evolve.generation import EvolveConfig, evolve_root, next_generation, read_state, run_generation
from molt.registry import Registry
from molt.registry.pairs import PRODUCTION
from faulty_network import Fault, FaultyRelay
from molt_processes import free_port, start_mint

CONTRACT = parse_contract({
    "contract_version": "1", "name": "tiny", "routing": {"cases": 5},
    "suites": [{"specialist": "agent", "cases": 10}, {"specialist": "chat", "cases": 10}],
})
REMOTE_FAULTS = [Fault("/create_model", 1, "duplicate"), Fault("/save_weights_for_sampler", 2, "reset"), Fault("/retrieve_future", 5, "drop")]
CONFIG = EvolveConfig(target="agent", bank=6, search=4, k=2, max_trials=1, update="sft")


class Stopped(Exception):
    """Stands for the process being killed between two phases."""


def test_a_stopped_generation_resumes_after_its_last_finished_phase_and_records_its_verdict(tiny_world, monkeypatch):
    url, done = tiny_world
    registry = Registry(url)
    incumbent = registry.resolve_alias(PRODUCTION)[0]
    assert incumbent == done.pair.id and next_generation("agent") == 1
    pairs_before = {e.id for e in registry.records("pair")}

    def stop(*args, **kwargs):
        raise Stopped()

    with monkeypatch.context() as patch:
        patch.setattr(generation, "train_candidate", stop)
        with pytest.raises(Stopped):
            run_generation(registry, CONTRACT, CONFIG, 1)
    folder = evolve_root("agent") / "gen-001"
    state = read_state(folder)
    assert list(state["phases"]) == ["discovery", "expansion", "collected"] and state["incumbent"] == incumbent
    assert {e.id for e in registry.records("pair")} == pairs_before  # nothing registered for the unfinished update
    rows = [json.loads(line) for line in (folder / "data.jsonl").read_text().splitlines()]
    assert len(rows) == state["phases"]["collected"]["rows"] and all(r["messages"][0]["role"] == "system" for r in rows)
    assert next_generation("agent") == 1  # the unfinished one is resumed, not skipped

    with monkeypatch.context() as patch:  # the finished phases are not run again
        patch.setattr(generation, "discover", stop)
        patch.setattr(generation, "expand", stop)
        state = run_generation(registry, CONTRACT, CONFIG, 1)
    assert list(state["phases"]) == ["discovery", "expansion", "collected", "update", "gate"]
    update, gate = state["phases"]["update"], state["phases"]["gate"]

    adapter = registry.get(update["adapter"])
    incumbent_agent = registry.get(incumbent).attributes["members"]["specialists"]["agent"]
    assert adapter.parents["started_from"] == incumbent_agent  # trained on from the served revision, base frozen
    job = registry.get(adapter.parents["trained_by"])
    assert registry.get(job.parents["data"]).parents == {"made_by": incumbent}
    candidate = registry.get(update["pair"])
    assert candidate.attributes["members"]["specialists"]["agent"] == adapter.id

    evaluation = registry.get(gate["evaluation"])
    assert evaluation.parents == {"subject": candidate.id, "incumbent": incumbent}
    evidence = evaluation.attributes["evidence"]
    assert evidence["contract"] == CONTRACT.digest and len(evidence["per_case"]["candidate"]["suites"]["agent"]) == 10
    assert [c["name"] for c in evidence["checks"]] == ["target:agent", "guard:chat", "guard:routing", "guard:latency"]
    assert evidence["per_case"]["candidate"]["reused"] == {"chat": "same adapter and prompt as the incumbent: answered once"}
    assert evidence["per_case"]["incumbent"]["batched"] == evidence["per_case"]["candidate"]["batched"] == ["chat"]
    assert generation.known_scores(registry, CONTRACT, incumbent).batched == ["chat"]
    production = registry.resolve_alias(PRODUCTION)[0]
    assert production == (candidate.id if gate["promoted"] else incumbent)
    assert evaluation.attributes["verdict"] == gate["reason"]
    assert next_generation("agent") == 2

    # stopped after the verdict was recorded but before the state was saved: nothing is judged or moved twice
    moves, evaluations = len(registry.history(PRODUCTION)), len(registry.records("evaluation"))
    with monkeypatch.context() as patch:
        patch.setattr(generation, "judged", stop)
        again = generation.gate(registry, CONTRACT, "agent", incumbent, candidate.id, 1, generation.Reporter())
    assert again | {"seconds": gate["seconds"]} == gate and len(registry.history(PRODUCTION)) == moves and len(registry.records("evaluation")) == evaluations


def test_a_generation_whose_incumbent_is_no_longer_production_starts_over(tiny_world, monkeypatch):
    url, done = tiny_world
    registry = Registry(url)
    folder = evolve_root("agent") / "gen-009"
    generation.save_state(folder, {"generation": 9, "target": "agent", "incumbent": "pair-gone", "contract": CONTRACT.digest, "config": {}, "phases": {"discovery": {}}})
    notes = []

    def stop(*args, **kwargs):
        raise Stopped()

    monkeypatch.setattr(generation, "discover", stop)
    with pytest.raises(Stopped):
        run_generation(registry, CONTRACT, CONFIG, 9, generation.Reporter(note=notes.append))
    assert "production is now" in notes[0] and read_state(folder)["incumbent"] == registry.resolve_alias(PRODUCTION)[0]
    assert read_state(folder)["phases"] == {}
    shutil.rmtree(folder)


def test_the_rl_update_trains_the_next_revision_with_molt_rl_from_the_served_one_on_a_remote_mint(tiny_world):
    """``molt evolve --mint-url``: the update trains in another process, over the Tinker protocol,
    through a faulty network (a run created twice, a lost reply to a save, a dropped poll)."""
    url, done = tiny_world
    registry = Registry(url)
    incumbent = registry.resolve_alias(PRODUCTION)[0]
    number = next_generation("agent")
    port = free_port()
    server = start_mint(port)  # inherits MOLT_HOME: the candidate's weights are read from the shared checkpoints
    try:
        with FaultyRelay(f"http://127.0.0.1:{port}", REMOTE_FAULTS) as relay:
            config = EvolveConfig(target="agent", bank=4, search=4, k=2, max_trials=1, update="rl", rl_steps=1, rl_watch=4, mint_url=relay.url)
            state = run_generation(registry, CONTRACT, config, number)
        remote_runs = httpx.get(f"http://127.0.0.1:{port}/api/v1/training_runs").json()["training_runs"]
    finally:
        server.terminate()
        server.wait(30)
    assert sorted(map(repr, relay.fired)) == sorted(map(repr, REMOTE_FAULTS))
    assert [r["base_model"] for r in remote_runs] == ["tiny"]  # the update's one run trained there, created once
    assert state["phases"]["collected"] == {"skipped": "the rl update samples and rewards its own groups"}
    adapter = registry.get(state["phases"]["update"]["adapter"])
    job = registry.get(adapter.parents["trained_by"])
    assert job.attributes["recipe"] == "rl" and job.attributes["metrics"]["steps"] == 1
    assert adapter.parents["started_from"] == registry.get(incumbent).attributes["members"]["specialists"]["agent"]
    assert "gate" in state["phases"] and (evolve_root("agent") / f"gen-{number:03d}" / "rl" / "metrics.jsonl").is_file()
