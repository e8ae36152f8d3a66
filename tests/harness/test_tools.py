"""Helpers the model saves: promoted only after passing in a fresh sandbox, demoted when they fail in use."""

import pytest

from molt.harness.substrate import Limits, Substrate
from molt.harness.tools import DEMOTE_AFTER, PROMOTED, ToolLibrary
from molt.registry.registry import Registry

LIMITS = Limits(wall_s=20)
REFUND_TOTAL = '''def refund_total(refunds, currency):
    return round(sum(r["amount"] for r in refunds if r["currency"] == currency), 2)
'''
CASES = [
    {"args": [[{"amount": 5.5, "currency": "EUR"}, {"amount": 2, "currency": "USD"}], "EUR"], "expected": 5.5},
    {"args": [[], "EUR"], "expected": 0},
]


@pytest.fixture
def library(tmp_path):
    registry = Registry(f"sqlite:///{tmp_path / 'registry.db'}")
    yield ToolLibrary(registry)
    registry.close()


@pytest.fixture
def substrate(tmp_path, library):
    substrate = Substrate(tmp_path / "sessions", LIMITS, host=lambda key: library.host_call, preload=library.promoted)
    yield substrate
    substrate.close()


def test_a_helper_that_passes_its_cases_is_callable_in_later_sessions(substrate, library):
    outcome = substrate.run("writer", REFUND_TOTAL + f"save_tool('refund_total', {CASES!r})\npromote_tool('refund_total')")
    assert outcome.error is None and "'promoted': True" in outcome.value, outcome
    later = substrate.run("another conversation", "refund_total([{'amount': 1.25, 'currency': 'EUR'}], 'EUR')")
    assert later.value == "1.25", later


def test_a_helper_that_fails_its_cases_is_never_callable(substrate, library):
    wrong = REFUND_TOTAL.replace('r["currency"] == currency', "True")
    outcome = substrate.run("writer", wrong + f"save_tool('refund_total', {CASES!r})\npromote_tool('refund_total')")
    assert "'promoted': False" in outcome.value, outcome
    assert "NameError" in substrate.run("another conversation", "refund_total([], 'EUR')").error
    assert library.promoted() == []
    verdicts = [e.attributes["verdict"] for e in library.registry.records("evaluation")]
    assert verdicts == ["fail"]


def test_validation_runs_in_a_fresh_sandbox_not_the_session_that_wrote_the_helper(substrate, library):
    """A helper leaning on the writer's session state passes there and fails promotion."""
    leaning = "def scaled(x):\n    return x * FACTOR\n"
    outcome = substrate.run("writer", f"FACTOR = 3\n{leaning}print(scaled(2))\nsave_tool('scaled', [{{'args': [2], 'expected': 6}}])\npromote_tool('scaled')")
    assert outcome.output.strip() == "6" and "'promoted': False" in outcome.value, outcome


def test_a_promoted_tool_that_keeps_failing_in_use_is_demoted_with_its_records_kept(substrate, library):
    library.stage("refund_total", REFUND_TOTAL, CASES)
    assert library.promote("refund_total")["promoted"]
    for attempt in range(DEMOTE_AFTER):
        assert library.promoted(), f"demoted after {attempt} failures"
        failed = substrate.run(f"user {attempt}", "refund_total([{'amount': 'ten', 'currency': 'EUR'}], 'EUR')")
        assert "TypeError" in failed.error
    assert library.promoted() == []
    assert "NameError" in substrate.run("later", "refund_total([], 'EUR')").error
    moves = library.registry.history(PROMOTED + "refund_total")
    assert [m.reason.split(";")[0] for m in moves] == ["passed 2 reference case(s) in a fresh sandbox", f"failed in use {DEMOTE_AFTER} times"]
    assert len(library.registry.records("tool")) == 1  # the tool's record stays
    verdicts = [e.attributes["verdict"] for e in library.registry.records("evaluation") if e.name == "tool-use"]
    assert verdicts == ["failed"] * (DEMOTE_AFTER - 1) + ["demoted"]


def test_a_new_version_must_also_pass_the_cases_of_the_one_it_replaces(library):
    library.stage("refund_total", REFUND_TOTAL, CASES)
    assert library.promote("refund_total")["promoted"]
    rewritten = "def refund_total(refunds, currency):\n    return 0\n"
    library.stage("refund_total", rewritten, [{"args": [[], "EUR"], "expected": 0}])
    verdict = library.promote("refund_total")
    assert not verdict["promoted"] and "the version it would replace" in verdict["reason"]
    assert library.current("refund_total").attributes["code"] == REFUND_TOTAL


def test_bad_saves_get_clear_errors(substrate):
    outcome = substrate.run("writer", "save_tool('nothing_here', [{'args': [], 'expected': 1}])")
    assert "no function named 'nothing_here'" in outcome.error
    outcome = substrate.run("writer", "def f(x):\n    return x\nsave_tool('f', [{'args': 1}])")
    assert "each reference case" in outcome.error
    outcome = substrate.run("writer", "def print(x):\n    return x\nsave_tool('print', [{'args': [1], 'expected': 1}])")
    assert "not a builtin or a session function" in outcome.error
    sneaky = "tools.refund(order='X', amount=1)\ndef g(x):\n    return x\n"
    outcome = substrate.run("writer", f"save_tool('g', [{{'args': [1], 'expected': 1}}], code={sneaky!r})")
    assert "imports and plain function definitions only" in outcome.error
