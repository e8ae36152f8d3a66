"""Tool proxies: NoAI fields never reach the model or the journal, a retried call runs its side effect once."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from molt.harness.proxies import CRASH_ENV, Journal, ProxyRunner
from molt.harness.actions import ActionHarness
from molt.hcp.v1 import Actions
from shop_proxies import Shop, proxies

SECRET = "shop-token-4242"
HERE = Path(__file__).parent


@pytest.fixture
def shop():
    shop = Shop()
    yield shop
    shop.server.shutdown()


@pytest.fixture
def runner(shop, tmp_path, monkeypatch):
    monkeypatch.setenv("SHOP_TOKEN", SECRET)
    return ProxyRunner(proxies(shop.url), Journal(tmp_path / "journal.jsonl"))


def test_noai_fields_stay_out_of_the_model_context_and_the_journal(runner, shop, tmp_path):
    schema = runner.schemas()[0]["function"]["parameters"]
    assert "token" not in schema["properties"] and schema["required"] == ["order", "amount"]
    result = runner.call("refund", {"order": "A-17", "amount": 12.5}, "conv-1:0")
    assert result == {"refund_id": "r1", "order": "A-17"}  # the card went nowhere near the model
    assert shop.tokens == [SECRET]  # the service got the injected secret
    journal = (tmp_path / "journal.jsonl").read_text()
    assert SECRET not in journal and "4111" not in journal
    with pytest.raises(Exception, match="token cannot be passed"):
        runner.call("refund", {"order": "A-18", "amount": 1, "token": "guess"}, "conv-1:1")


@pytest.mark.parametrize("crash_at", ["before-send", "after-send"])
def test_a_call_retried_after_a_crash_runs_its_side_effect_once(shop, tmp_path, crash_at, monkeypatch):
    journal = tmp_path / "journal.jsonl"
    crashing = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(HERE)!r})
from molt.harness.proxies import Journal, ProxyRunner
from shop_proxies import Shop, proxies
ProxyRunner(proxies({shop.url!r}), Journal(Path({str(journal)!r}))).call("refund", {{"order": "B-2", "amount": 30}}, "conv-2:0")
"""
    done = subprocess.run([sys.executable, "-c", crashing], env={"PATH": "/usr/bin:/bin", CRASH_ENV: crash_at, "SHOP_TOKEN": SECRET}, capture_output=True, text=True)
    assert done.returncode == 70, done.stderr
    assert len(shop.refunds) == (1 if crash_at == "after-send" else 0)
    monkeypatch.setenv("SHOP_TOKEN", SECRET)
    retried = ProxyRunner(proxies(shop.url), Journal(journal))
    assert retried.call("refund", {"order": "B-2", "amount": 30}, "conv-2:0") == {"refund_id": "r1", "order": "B-2"}
    assert retried.call("refund", {"order": "B-2", "amount": 30}, "conv-2:0") == {"refund_id": "r1", "order": "B-2"}
    assert len(shop.refunds) == 1


def test_a_finished_call_is_not_sent_again_and_undo_runs_once(runner, shop):
    runner.call("refund", {"order": "C-3", "amount": 5}, "conv-3:0")
    served = len(shop.by_key)
    runner.call("refund", {"order": "C-3", "amount": 5}, "conv-3:0")
    assert len(shop.by_key) == served and len(shop.refunds) == 1
    assert runner.undo("refund:conv-3:0") == {"cancelled": "C-3"}
    assert runner.undo("refund:conv-3:0") == {"cancelled": "C-3"}
    assert shop.cancelled == ["C-3"]


def test_a_session_reaches_a_service_only_through_its_proxy(runner, shop, tmp_path):
    harness = ActionHarness(runner, Actions(wall_s=10), tmp_path)

    def run(code: str, step: int) -> str:
        call = {"id": "c", "type": "function", "function": {"name": "python", "arguments": json.dumps({"code": code})}}
        return harness.execute(call, "conv-4", f"conv-4:turn:{step}")["content"]

    try:
        outcome = run("r = tools.refund(order='D-4', amount=7.5)\nr", 0)
        direct = run(f"import urllib.request; urllib.request.urlopen({shop.url + '/refunds'!r}, b'{{}}', timeout=2)", 1)
        unknown = run("tools.wire_money(amount=1)", 2)
    finally:
        harness.close()
    assert outcome == "{'refund_id': 'r1', 'order': 'D-4'}", outcome
    assert "Connection refused" in direct and len(shop.refunds) == 1
    assert "no tool proxy named 'wire_money'" in unknown

