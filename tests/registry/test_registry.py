"""The registry on SQLite and on a real PostgreSQL server: content-addressed records with their
parents, aliases whose every move is recorded, concurrent writers, crash safety, gc.
Run: pytest tests/registry"""

import json
import os
import subprocess
import sys
import threading

import pytest

from molt.lora.synthetic import write_random_adapter
from molt.registry import Registry, RegistryError
from molt.registry.lineage import describe
from molt.registry.registry import CRASH_ENV
from molt.registry.store import ContentStore


@pytest.fixture
def registry(db_url, tmp_path):
    registry = Registry(db_url, ContentStore(tmp_path / "store"))
    yield registry
    registry.close()


@pytest.fixture(scope="module")
def adapter_folders(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("adapters")
    return [write_random_adapter(root / f"a{i}", tiny.model, "tiny", r=2 + i, seed=i) for i in range(3)]


def lineage_ids(node) -> list[tuple[str, str]]:
    return [(node.role, node.entry.id)] + [pair for parent in node.parents for pair in lineage_ids(parent)]


def test_records_name_their_parents_and_the_same_content_is_the_same_record(registry, adapter_folders, tmp_path):
    data = tmp_path / "chat.jsonl"
    data.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}) + "\n")
    base = registry.add_base("tiny")
    dataset = registry.add_dataset(data, source="family:chat")
    job = registry.add_job("chat", "sft", {"rank": 2, "learning_rate": 1e-3}, {"losses": [2.0, 1.5]}, {"base": base.id, "data": dataset.id})
    adapter = registry.add_adapter(adapter_folders[0], "chat", {"trained_by": job.id, "base": base.id})

    assert adapter.attributes["rank"] == 2 and adapter.attributes["revision"] == f"store/{adapter.content_hash}"
    stored = registry.store.path(adapter.content_hash)
    assert sorted(p.name for p in stored.iterdir()) == ["adapter_config.json", "adapter_model.safetensors"]
    assert (stored / "adapter_model.safetensors").read_bytes() == (adapter_folders[0] / "adapter_model.safetensors").read_bytes()
    assert dataset.attributes["rows"] == 1 and registry.store.path(dataset.content_hash).joinpath("data.jsonl").read_text() == data.read_text()

    again = registry.add_adapter(adapter_folders[0], "chat-again")
    assert again.id == adapter.id and again.parents == {"base": base.id, "trained_by": job.id}  # the first registration stands
    other = registry.add_adapter(adapter_folders[1], "other")
    assert other.id != adapter.id
    assert registry.add_job("chat", "sft", {}, {}).id != job.id  # events are never merged

    # ...unless a job names the weights it made: a finished run recorded again (resumed) is one job
    jobs = len(registry.records("job"))
    trained = registry.add_trained_adapter(adapter_folders[2], "next", "rl", {"steps": 2}, {"steps": 2, "reward": [0.1]}, {"base": base.id}, started_from=adapter.id)
    resumed = registry.add_trained_adapter(adapter_folders[2], "next", "rl", {"steps": 2}, {"steps": 2, "reward": [0.1, 0.2]}, {"base": base.id}, started_from=adapter.id)
    assert resumed == trained and len(registry.records("job")) == jobs + 1
    made_it = registry.get(trained.parents["trained_by"])
    assert trained.parents["started_from"] == adapter.id and made_it.parents == {"base": base.id} and made_it.attributes["metrics"] == {"steps": 2, "reward": [0.1]}
    assert describe(made_it).endswith("(rl, 2 steps)") and describe(job).endswith("(sft, 2 steps)")  # RL records steps, SFT one loss per step

    hcp = registry.add_hcp('name = "default"\n', "default")
    pair = registry.add_pair("default", base.id, hcp.id, None, {"chat": adapter.id})
    assert registry.add_pair("default", base.id, hcp.id, None, {"chat": adapter.id}).id == pair.id
    assert lineage_ids(registry.lineage(pair.id)) == [
        ("", pair.id), ("base", base.id), ("hcp", hcp.id), ("specialist:chat", adapter.id),
        ("base", base.id), ("trained_by", job.id), ("base", base.id), ("data", dataset.id),
    ]
    assert [e.id for e in registry.records("adapter")] == [adapter.id, other.id, trained.id]
    assert registry.get(pair.id[:9]).id == pair.id


def test_bad_references_are_clear_errors_and_change_nothing(registry):
    base = registry.add_base("tiny")
    with pytest.raises(RegistryError, match="parent hcp='hcp-missing' is not in the registry"):
        registry.add_pair("p", base.id, "hcp-missing", None, {})
    with pytest.raises(RegistryError, match="no record or alias named 'nothing'"):
        registry.get("nothing")
    with pytest.raises(RegistryError, match="unknown kind"):
        registry.add("model", "x", {})
    registry.add_hcp("a", "a"), registry.add_hcp("b", "b")
    with pytest.raises(RegistryError, match="several record ids"):
        registry.get("hcp-")
    with pytest.raises(RegistryError, match="no record or alias"):
        registry.move("production", "pair-nothing", "test", "bad target")
    assert [e.kind for e in registry.records()] == ["base", "hcp", "hcp"] and registry.aliases() == {}


def test_alias_moves_are_recorded_and_rollback_goes_back(registry):
    base = registry.add_base("tiny")
    pairs = [registry.add_pair(f"p{i}", base.id, registry.add_hcp(f"v{i}", "h").id, None, {}) for i in range(3)]
    with pytest.raises(RegistryError, match="no alias named 'production'"):
        registry.rollback("production", "test")
    registry.move("production", pairs[0].id, "alice", "first")
    with pytest.raises(RegistryError, match="nothing to roll back to"):
        registry.rollback("production", "test")
    registry.move("production", pairs[1].id, "bob", "better on held-out")
    registry.move("candidate", pairs[2].id, "evolve", "new")
    back = registry.rollback("production", "carol", "regression")
    assert (back.from_id, back.to_id, back.actor, back.reason) == (pairs[1].id, pairs[0].id, "carol", "regression")
    assert registry.aliases() == {"candidate": pairs[2].id, "production": pairs[0].id}
    assert registry.get("production").id == pairs[0].id
    history = [(m.alias, m.from_id, m.to_id, m.actor) for m in registry.history("production")]
    assert history == [("production", None, pairs[0].id, "alice"), ("production", pairs[0].id, pairs[1].id, "bob"), ("production", pairs[1].id, pairs[0].id, "carol")]


def test_eight_concurrent_writers_lose_nothing_and_aliases_never_half_move(registry):
    """8 threads register events and colliding artefacts and move one alias; a reader checks,
    the whole time, that the alias and the move that put it there agree."""
    base = registry.add_base("tiny")
    pairs = [registry.add_pair(f"p{i}", base.id, registry.add_hcp(f"pair {i}", "h").id, None, {}) for i in range(4)]
    errors, stop = [], threading.Event()

    def writer(w: int) -> None:
        try:
            for i in range(12):
                registry.add_job(f"w{w}", "sft", {"i": i}, {})
                registry.add_hcp(f"shared {i % 6}", "shared")  # every writer registers the same 6 texts
                registry.move("production", pairs[(w + i) % 4].id, f"writer {w}", f"move {i}")
        except Exception as e:  # noqa: BLE001 — reported below
            errors.append(e)

    def reader() -> None:
        while not stop.is_set():
            seen = registry.resolve_alias("production")
            if seen is not None and seen[0] != seen[1].to_id:
                errors.append(AssertionError(f"half-moved alias: {seen}"))

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(8)]
    watcher = threading.Thread(target=reader)
    watcher.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    assert errors == []
    jobs = registry.records("job")
    assert len(jobs) == 96 and len({j.id for j in jobs}) == 96
    assert sorted(h.name for h in registry.records("hcp") if h.name == "shared") == ["shared"] * 6
    moves = registry.history("production")
    assert len(moves) == 96
    for before, after in zip(moves, moves[1:]):  # every move starts where the previous one ended: no lost update
        assert after.from_id == before.to_id
    assert registry.aliases()["production"] == moves[-1].to_id


CRASHING_REGISTRATION = """
import sys
from pathlib import Path
from molt.registry import Registry
from molt.registry.store import ContentStore
registry = Registry(sys.argv[1], ContentStore(Path(sys.argv[2])))
registry.add_adapter(Path(sys.argv[3]), "chat")
"""


@pytest.mark.parametrize("point", ["stored", "before-commit"])
def test_a_crash_while_registering_leaves_no_record_pointing_at_missing_files(registry, adapter_folders, point):
    folder = adapter_folders[1]
    env = {**os.environ, CRASH_ENV: point}
    run = subprocess.run([sys.executable, "-c", CRASHING_REGISTRATION, str(registry.engine.url.render_as_string(hide_password=False)), str(registry.store.root), str(folder)], env=env, capture_output=True, text=True)
    assert run.returncode == 70, run.stderr
    assert registry.records("adapter") == []  # the old state: nothing registered
    orphans = registry.store.hashes()
    assert len(orphans) == 1  # the files got in, the record did not
    assert registry.gc(min_age_s=3600) == []  # too young: might be a registration under way
    assert [p.name for p in registry.gc(min_age_s=0)] == list(orphans)
    assert registry.store.hashes() == set()
    stale = registry.store.path(registry.store.put(folder))  # an orphan of the same content, old enough to collect…
    os.utime(stale, (0, 0))
    adapter = registry.add_adapter(folder, "chat")  # …is reused by a new registration, which makes it young again
    assert registry.store.remove_unreferenced(set(), min_age_s=3600) == [] and stale.is_dir()  # a gc that read the records just before it committed
    assert registry.store.path(adapter.content_hash).joinpath("adapter_model.safetensors").is_file()
    assert registry.gc(min_age_s=0) == []  # referenced files stay


def test_an_evaluation_records_rates_with_wilson_intervals_and_a_verdict(registry):
    from molt.registry.pairs import register_evaluation, wilson

    low, high = wilson(0.5, 30)
    assert round(low, 4) == 0.3315 and round(high, 4) == 0.6685  # the Wilson 95% interval of 15/30
    assert wilson(1.0, 5)[1] == 1.0 and wilson(0.0, 0) == (0.0, 1.0)
    base = registry.add_base("tiny")
    pair = registry.add_pair("p", base.id, registry.add_hcp("x", "h").id, None, {})
    figures = lambda score: {"score": score, "n": 30.0}
    result = {"splits": {"heldout": {"coding": {"base": figures(0.2), "specialist": figures(0.5), "routed": figures(0.1)}}}}
    evaluation = register_evaluation(registry, pair.id, result)
    assert evaluation.parents == {"subject": pair.id} and evaluation.attributes["verdict"] == "fail: routed < base on coding.score"
    assert evaluation.attributes["metrics"]["heldout.coding.specialist.score"] == {"value": 0.5, "low": low, "high": high, "n": 30}
    result["splits"]["heldout"]["coding"]["routed"] = figures(0.5)
    assert register_evaluation(registry, pair.id, result).attributes["verdict"].startswith("pass")
