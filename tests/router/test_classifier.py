"""The trained classifier router on the tiny base: it learns separable requests, survives a save
and load unchanged, abstains below min_confidence, obeys guardrails, refuses a router made for
other labels or another base, and the HCP selects it.
Run: pytest tests/router/test_classifier.py"""

import asyncio
import tomllib

import pytest
import torch

from molt.hcp import HCPError, default_hcp_path, parse_hcp
from molt.router import ClassifierRouter, make_router
from molt.router.classifier import RouterFileError, RouterModel, train_router
from molt.router.features import HiddenStateFeatures
from molt.router.training import accuracy_report, read_traffic, routing_set

TOPICS = {"chat": "hello friend how are you", "agent": "book reserve schedule remind", "coding": "python function code bug", "genui": "form card picker button"}


def hcp_with(**router):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["router"].update(router)
    return parse_hcp(data)


def requests(per_label: int, offset: int = 0):
    texts, labels = [], []
    for label, words in TOPICS.items():
        vocabulary = words.split()
        for i in range(per_label):
            texts.append(" ".join(vocabulary[(i + offset + j) % len(vocabulary)] for j in range(3)))
            labels.append(label)
    return texts, labels


@pytest.fixture(scope="module")
def features():
    return HiddenStateFeatures("tiny", 2)


@pytest.fixture(scope="module")
def router_model(features):
    texts, labels = requests(8)
    return train_router(texts, labels, list(TOPICS), features, {"note": "test"})


def test_it_learns_separable_requests_and_round_trips(router_model, features, tmp_path):
    texts, labels = requests(4, offset=1)
    predicted = [router_model.labels[i] for i in router_model.probabilities(features(texts)).argmax(-1).tolist()]
    assert accuracy_report(labels, predicted, list(TOPICS))["accuracy"] == 1.0
    loaded = RouterModel.load(router_model.save(tmp_path / "r"))
    assert loaded.labels == router_model.labels and loaded.info == {"note": "test"}
    assert torch.equal(loaded.probabilities(features(texts)), router_model.probabilities(features(texts)))


def test_the_hcp_selects_the_classifier_and_it_routes(router_model, features, tmp_path):
    router_model.save(tmp_path / "r")
    hcp = hcp_with(kind="classifier", classifier=str(tmp_path / "r"), guardrails=[{"label": "genui", "keywords": ["dashboard"]}])
    router = make_router(hcp, None, None)
    assert isinstance(router, ClassifierRouter)
    decision = asyncio.run(router.route("python code bug"))
    assert decision.label == "coding" and decision.kind == "scored" and set(decision.scores) == set(TOPICS)
    assert asyncio.run(router.route("a python dashboard")).kind == "guardrail"

    unsure = ClassifierRouter(hcp_with(kind="classifier", classifier="x", min_confidence=0.5), router_model, features)
    decision = unsure.decide("?", {"chat": 0.2, "agent": 0.1, "coding": 0.45, "genui": 0.25})
    assert decision.label == "chat" and decision.kind == "abstained" and "coding p=0.45" in decision.reason
    assert unsure.decide("?", {"chat": 0.2, "agent": 0.0, "coding": 0.55, "genui": 0.25}).label == "coding"


def test_a_router_for_other_labels_or_another_base_is_refused(router_model, features, tmp_path):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["specialists"] = data["specialists"][:3]
    data["router"].update(kind="classifier", classifier="x")
    with pytest.raises(RouterFileError, match="trained for labels"):
        ClassifierRouter(parse_hcp(data), router_model, features)
    data = tomllib.loads(default_hcp_path().read_text())
    data["router"].update(kind="classifier", classifier="x")
    with pytest.raises(RouterFileError, match="features of base 'tiny'"):
        ClassifierRouter(parse_hcp(data), router_model, features)
    with pytest.raises(RouterFileError, match="cannot read the router"):
        RouterModel.load(tmp_path / "missing")
    with pytest.raises(HCPError, match="needs router.classifier"):
        hcp_with(kind="classifier")


def test_routing_sets_and_traffic(tmp_path):
    hcp = hcp_with()
    texts, labels = routing_set(hcp, "train", 5)
    assert set(labels) == set(TOPICS) and len(texts) == 20 + sum(len(s.examples) for s in hcp.specialists)
    held, _ = routing_set(hcp, "heldout", 5)
    assert len(held) == 20 and not set(held) & set(texts)
    log = tmp_path / "traffic.jsonl"
    log.write_text('{"text": "ship it", "label": "agent"}\n\n')
    assert read_traffic(log, list(TOPICS)) == (["ship it"], ["agent"])
    log.write_text('{"text": "ship it", "label": "weather"}\n')
    with pytest.raises(ValueError, match="traffic.jsonl:1"):
        read_traffic(log, list(TOPICS))
