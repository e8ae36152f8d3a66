"""The registry through the ``molt`` command, on a toy bootstrap of the tiny model: bootstrap
registers a pair as production, a manual ``molt train sft`` registers a revision, ``promote``
makes a new pair of it, ``lineage`` draws the ancestry, ``rollback`` goes back.
Run: pytest tests/registry/test_registry_cli.py"""

import json
import os
import subprocess
import sys
import uuid

import pytest

from molt.families import Recipe
from molt.hcp import load_hcp
from molt.registry import Registry
from molt.registry.local_postgres import create_database
from molt.registry.pairs import pair_hcp
from molt.specialists.bootstrap import bootstrap
from toy_sizes import TINY_ROUTER


def molt(db: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "MOLT_DB": db}
    result = subprocess.run([sys.executable, "-m", "molt", *args], capture_output=True, text=True, timeout=300, env=env)
    print(result.stdout[-3000:], result.stderr[-3000:], sep="\n")
    return result


@pytest.fixture
def db_url(postgres):
    """PostgreSQL only: the registry's own tests cover both backends, and every other command-line
    test runs on the default SQLite file."""
    return create_database(postgres, f"molt_{uuid.uuid4().hex[:12]}")


def test_bootstrap_train_promote_lineage_rollback(db_url, tmp_path, monkeypatch):
    monkeypatch.setenv("MOLT_HOME", str(tmp_path / "home"))
    shipped = load_hcp()
    shipped = shipped.model_copy(update={"model": shipped.model.model_copy(update={"base": "tiny"})})
    registry = Registry(db_url)
    done = bootstrap(shipped, labels=["chat"], recipes={"chat": Recipe(examples=6, batch_tokens=1024)}, router=TINY_ROUTER, registry=registry)
    assert done.alias == "production" and registry.aliases() == {"production": done.pair.id}
    served = pair_hcp(registry, "production")
    chat = next(s for s in served.specialists if s.label == "chat")
    assert chat.revision.startswith("store/") and (tmp_path / "home" / "adapters" / chat.revision / "adapter_model.safetensors").is_file()
    assert served.router.classifier.startswith("adapters/store/") and (tmp_path / "home" / served.router.classifier).is_dir()

    data = tmp_path / "more-chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": f"Say {w}."}, {"role": "assistant", "content": f"{w.title()}!"}]} for w in ["hello", "yes", "thanks", "good night"] * 3]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    trained = molt(db_url, "train", "sft", "--model", "tiny", "--data", str(data), "--adapter", "chat", "--max-steps", "2", "--json")
    assert trained.returncode == 0
    revision = json.loads(trained.stdout)["record"]
    assert revision.startswith("adapter-") and revision != served.specialists[0].revision

    promoted = molt(db_url, "registry", "promote", revision, "--reason", "more greetings")
    assert promoted.returncode == 0 and "new pair" in promoted.stdout
    new_pair = registry.aliases()["production"]
    assert new_pair != done.pair.id
    assert registry.get(new_pair).attributes["members"]["specialists"] == {"chat": revision}
    assert registry.get(registry.get(new_pair).attributes["members"]["hcp"]).parents == {"derived_from": done.pair.attributes["members"]["hcp"]}

    picture = tmp_path / "lineage.png"
    lineage = molt(db_url, "registry", "lineage", "production", "--png", str(picture))
    assert lineage.returncode == 0
    for expected in (new_pair, revision, "trained_by: job", "data: dataset", "derived_from: hcp", "← production"):
        assert expected in lineage.stdout
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 10_000

    back = molt(db_url, "registry", "rollback", "--reason", "worse on held-out")
    assert back.returncode == 0 and registry.aliases()["production"] == done.pair.id
    history = molt(db_url, "registry", "history", "production")
    assert history.returncode == 0 and "worse on held-out" in history.stdout and "more greetings" in history.stdout
    listing = molt(db_url, "registry", "list", "--kind", "pair")
    assert listing.returncode == 0 and done.pair.id in listing.stdout and new_pair in listing.stdout

    missing = molt(db_url, "registry", "show", "pair-nothing")
    assert missing.returncode == 2 and "no record or alias named 'pair-nothing'" in missing.stderr and "Traceback" not in missing.stderr
    assert molt(db_url, "registry", "gc", "--min-age", "0").returncode == 0
    assert (tmp_path / "home" / "adapters" / chat.revision).is_dir()  # still referenced: kept
