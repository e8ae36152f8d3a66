"""The external contract: versioned, validated, pinned to its cases, and never trained on."""

import os
import re
import subprocess
import sys
import tomllib

import pytest

from molt.evolve.contract import ContractError, HeldOut, cases_hash, check_training, default_contract_path, load_contract, parse_contract, suite_cases
from molt.families import FAMILIES

BASE = {"contract_version": "1", "name": "t", "suites": [{"specialist": "agent", "cases": 10}, {"specialist": "chat", "cases": 10}]}


def test_the_default_contract_covers_every_specialist_and_its_pinned_suites_still_hash_the_same():
    contract = load_contract()
    assert {s.specialist for s in contract.suites} == set(FAMILIES)
    for suite in contract.suites:
        assert suite.split == "heldout" and suite.sha256, f"{suite.specialist}: the default contract pins a held-out suite"
        assert cases_hash(suite_cases(suite)) == suite.sha256


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"contract_version": "2"}, "contract_version must be one of '1'"),
        ({"contract_version": None}, "contract_version must be one of '1'"),
        ({"surprise": 1}, "surprise: Extra inputs are not permitted"),
        ({"test": {"confidence": 1.5}}, "test.confidence"),
        ({"suites": [{"specialist": "agent", "family": "poetry"}]}, "family 'poetry' is not one of molt's"),
        ({"suites": [{"specialist": "agent", "split": "train"}]}, "suites[0].split: Input should be 'heldout' or 'wording'"),
        ({"suites": [{"specialist": "agent"}, {"specialist": "agent"}]}, "one suite per specialist; repeated: agent"),
    ],
)
def test_a_bad_contract_is_a_clear_error(change, message):
    with pytest.raises(ContractError, match=re.escape(message)):
        parse_contract(BASE | change, "c.toml")


def test_a_suite_whose_cases_changed_under_its_pin_is_refused():
    pinned = parse_contract(BASE | {"suites": [{"specialist": "agent", "cases": 10, "sha256": "0" * 64}]})
    with pytest.raises(ContractError, match="the agent suite's cases changed"):
        suite_cases(pinned.suites[0])
    assert pinned.suite("agent").cases == 10
    with pytest.raises(ContractError, match="no held-out suite for 'genui'"):
        pinned.suite("genui")


def test_training_rows_that_hold_a_held_out_request_or_answer_are_refused(tmp_path):
    contract = parse_contract(BASE)
    train = [case.training_row("system") for label in ("agent", "chat") for case in FAMILIES[label].generate("train", 40, seed=3)]
    check_training(contract, train)  # the families' train splits never overlap their held-out splits
    leaked = suite_cases(contract.suite("chat"))[4]
    sneaky = {"messages": [{"role": "user", "content": "  " + leaked.request.upper() + " "}, {"role": "assistant", "content": "ok"}]}
    answer = {"messages": [{"role": "user", "content": "something else entirely"}, leaked.answer]}
    assert [o.row for o in HeldOut(contract).overlaps([*train, sneaky, answer])] == [len(train), len(train) + 1]
    with pytest.raises(ContractError, match=r"overlaps the contract's held-out suites in 2 rows .*chat suite"):
        check_training(contract, [*train, sneaky, answer], "the update's dataset")


def test_the_shipped_file_is_toml_with_its_reasons_written_down():
    text = default_contract_path().read_text(encoding="utf-8")
    assert tomllib.loads(text)["contract_version"] == "1" and "never edits this file" in text


def test_molt_evolve_shows_the_contract_and_refuses_a_bad_one(tmp_path):
    shown = subprocess.run([sys.executable, "-m", "molt", "evolve", "--show-contract"], capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert shown.returncode == 0 and "contract molt-default (version 1)" in shown.stdout
    assert shown.stdout.count("pinned") == 4 and "paired_bootstrap at 90%" in shown.stdout
    bad = tmp_path / "c.toml"
    bad.write_text('contract_version = "7"\nname = "x"\n')
    refused = subprocess.run([sys.executable, "-m", "molt", "evolve", "--contract", str(bad)], capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "contract_version must be one of '1', not '7'" in refused.stderr
