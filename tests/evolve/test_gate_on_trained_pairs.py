"""The gate on real answers of the embedded model: a candidate trained on corrupted labels is
rejected, and so is one that gains on the target while another specialist regresses beyond its
margin. Pairs are built from the session's bootstrapped specialists (chat, and an agent trained
on five functions) and answer small suites of the contract's kind, one case at a time; the
harmed pair's results are measured once and reused."""

import json
import random

import pytest

from molt.evolve.contract import parse_contract
from molt.evolve.evaluate import evaluate_pairs
from molt.evolve.gate import PairScores, judge
from molt.families import FAMILIES
from molt.lora.format import read_adapter
from molt.mint import ServiceClient
from molt.mint.checkpoints import resolve
from molt.registry import Registry
from molt.registry.pairs import pair_hcp, register_sft, with_adapter
from molt.train.sft import SFTConfig, run_sft
from session_bootstrap import FUNCTIONS

# the trained agent's five functions show up in the wording split; the held-out split's are all new
# latency is not under test here (ten routed turns, a loose bound); the suites and routing are
CONTRACT = parse_contract({
    "contract_version": "1", "name": "trained-pairs", "routing": {"cases": 5}, "latency": {"max_increase": 2.0},
    "suites": [{"specialist": "agent", "split": "wording", "cases": 18, "seed": 7}, {"specialist": "chat", "split": "wording", "cases": 10, "seed": 7, "max_drop": 0.05}],
})


def corrupted_rows(label: str, system: str) -> list[dict]:
    """Train rows whose answers are wrong on purpose: calls to the wrong function, chat answers that
    are a code dump instead of a sentence."""
    rng = random.Random(0)
    rows = []
    options = {"functions": FUNCTIONS} if label == "agent" else {}
    for case in FAMILIES[label].generate("train", 24, seed=11, **options):
        row = case.training_row(system)
        answer = row["messages"][-1]
        if answer.get("tool_calls"):
            others = [t["function"]["name"] for t in case.tools or [] if t["function"]["name"] != answer["tool_calls"][0]["function"]["name"]]
            answer["tool_calls"] = [{**c, "function": {"name": rng.choice(others or ["nothing"]), "arguments": "{}"}} for c in answer["tool_calls"]]
        else:
            row["messages"][-1] = {"role": "assistant", "content": "```\n{\"error\": true}\n```"}
        rows.append(row)
    return rows


def corrupt(registry: Registry, pair: str, label: str, tmp_path) -> str:
    """``pair`` with ``label``'s adapter trained on from its revision on corrupted labels."""
    hcp = pair_hcp(registry, pair)
    start = "molt://" + hcp.specialist(label).revision
    data = tmp_path / f"{label}-corrupted.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in corrupted_rows(label, hcp.system_prompt(label))))
    config = SFTConfig(
        adapter=f"{label}-corrupted", data=data, base_model=hcp.model.base, rank=read_adapter(resolve(start)).r, learning_rate=3e-3,
        max_steps=8, batch_tokens=1024, eval_fraction=0, train_unembed=False, init_from=start,
    )
    adapter = register_sft(registry, config, run_sft(config, ServiceClient(dtype="auto")), source="corrupted labels (test)")
    return with_adapter(registry, pair, adapter.id, label=label).id


@pytest.fixture(scope="module")
def registry(bootstrapped):
    return Registry()


@pytest.fixture(scope="module")
def harmed(registry, bootstrapped, tmp_path_factory):
    """The bootstrapped pair with its agent trained on corrupted labels, and both pairs' results."""
    candidate = corrupt(registry, bootstrapped.pair.id, "agent", tmp_path_factory.mktemp("corrupted"))
    before, after = evaluate_pairs(CONTRACT, pair_hcp(registry, bootstrapped.pair.id), pair_hcp(registry, candidate))
    return candidate, before, after


def test_a_candidate_trained_on_corrupted_labels_is_rejected(harmed):
    _, before, after = harmed
    verdict = judge(CONTRACT, "agent", before, after)
    target = verdict.checks[0]
    print(verdict.to_json())
    assert target.before > 0.1, "the incumbent agent solves part of the suite, so harm can show"
    assert not verdict.promote and not target.passed and target.after < target.before
    assert after.reused == {"chat": "same adapter and prompt as the incumbent: answered once"}


def test_a_target_gain_bought_with_a_chat_regression_is_rejected(registry, bootstrapped, harmed, tmp_path):
    """Incumbent: the harmed pair (its agent never right). Candidate: the trained agent back, with
    a chat trained on corrupted labels. Every case the trained agent gets right is a gain."""
    harmed_pair, _, harmed_results = harmed
    candidate = corrupt(registry, bootstrapped.pair.id, "chat", tmp_path)
    before, after = evaluate_pairs(CONTRACT, pair_hcp(registry, harmed_pair), pair_hcp(registry, candidate), known=PairScores(harmed_results.suites))
    verdict = judge(CONTRACT, "agent", before, after)
    print(verdict.to_json())
    checks = {c.name: c for c in verdict.checks}
    assert checks["target:agent"].passed, "the trained agent beats the harmed one beyond noise"
    assert not checks["guard:chat"].passed and checks["guard:chat"].after < checks["guard:chat"].before
    assert not verdict.promote and verdict.reason == "reject: guard:chat failed"
