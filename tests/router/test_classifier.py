"""The trained classifier router on the tiny base: it learns separable requests, survives a save
and load unchanged, tells the same words apart by the turn's structure, abstains below
min_confidence, obeys guardrails, refuses a router made for other labels or another base, and
the HCP selects it; routing sets and traffic logs. On the embedded model (marker ``embedded``):
a quickly trained router sends a request for one of the offered functions to the agent, and the
same functions offered with a question or a coding request elsewhere.
Run: pytest tests/router/test_classifier.py"""

import asyncio
import json
import tomllib

import pytest
import torch

from molt.hcp import HCPError, default_hcp_path, load_hcp, parse_hcp
from molt.router import ClassifierRouter, RouteRequest, make_router
from molt.router.classifier import RouterFileError, RouterModel, train_router
from molt.router.features import HiddenStateFeatures, RouteFeatures
from molt.router.structure import STRUCTURE
from molt.router.training import RoutingSet, accuracy_report, outside_set, read_traffic, routing_set

TOPICS = {"chat": "hello friend how are you", "agent": "book reserve schedule remind", "coding": "python function code bug", "genui": "form card picker button"}
RIDE = {"type": "function", "function": {"name": "summon_gondola", "description": "Send a gondola to pick the user up at a canal stop.",
                                         "parameters": {"type": "object", "properties": {"stop": {"type": "string", "description": "Canal stop"}}}}}


def hcp_with(**router):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["router"].update(router)
    return parse_hcp(data)


def requests(per_label: int, offset: int = 0) -> RoutingSet:
    texts, labels = [], []
    for label, words in TOPICS.items():
        vocabulary = words.split()
        for i in range(per_label):
            texts.append(" ".join(vocabulary[(i + offset + j) % len(vocabulary)] for j in range(3)))
            labels.append(label)
    return RoutingSet([RouteRequest(t) for t in texts], labels)


@pytest.fixture(scope="module")
def hidden():
    return HiddenStateFeatures("tiny", 2)


@pytest.fixture(scope="module")
def router_model(hidden):
    train = requests(8)
    return train_router(train.requests, train.labels, list(TOPICS), RouteFeatures(hidden), {"note": "test"})


def test_it_learns_separable_requests_and_round_trips(router_model, hidden, tmp_path):
    held = requests(4, offset=1)
    features = router_model.features(hidden)
    assert accuracy_report(held.labels, router_model.predict(features(held.requests)), list(TOPICS))["accuracy"] == 1.0
    loaded = RouterModel.load(router_model.save(tmp_path / "r"))
    assert loaded.labels == router_model.labels and loaded.info == {"note": "test"} and loaded.structure == list(STRUCTURE)
    again = loaded.features(hidden)
    assert torch.equal(loaded.probabilities(again(held.requests)), router_model.probabilities(features(held.requests)))


def test_the_same_words_are_routed_by_the_turns_structure(hidden):
    """Identical texts labelled agent when a matching function is offered or a tool result came
    back, chat otherwise: a router over the text alone cannot beat 50% here, so passing needs
    the structure features (the tiny model's hidden states are the same for equal texts)."""
    texts = ["gondola to the rialto stop", "a gondola at san marco", "send the gondola now", "gondola for two please"]
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "summon_gondola", "arguments": "{}"}}]}
    turns = [RouteRequest(t) for t in texts] + [RouteRequest(t, (RIDE,)) for t in texts]
    turns += [RouteRequest(t, (), ({"role": "user", "content": t}, call, {"role": "tool", "tool_call_id": "c", "content": "{}"})) for t in texts]
    labels = ["chat"] * 4 + ["agent"] * 8
    model = train_router(turns, labels, ["chat", "agent"], RouteFeatures(hidden))
    assert model.predict(model.features(hidden)(turns)) == labels
    text_only = train_router(turns, labels, ["chat", "agent"], RouteFeatures(hidden, structure=()))
    assert text_only.predict(text_only.features(hidden)(turns)) != labels


def test_a_text_only_router_file_still_loads(router_model, hidden, tmp_path):
    """A molt-router/1 folder (before structure features) is a router with none."""
    text_only = train_router(requests(4).requests, requests(4).labels, list(TOPICS), RouteFeatures(hidden, structure=()))
    folder = text_only.save(tmp_path / "v1")
    meta = json.loads((folder / "router.json").read_text())
    (folder / "router.json").write_text(json.dumps({k: v for k, v in {**meta, "format": "molt-router/1"}.items() if k != "structure"}))
    loaded = RouterModel.load(folder)
    assert loaded.structure == [] and loaded.features(hidden).size == hidden.size


def test_the_hcp_selects_the_classifier_and_it_routes(router_model, hidden, tmp_path):
    router_model.save(tmp_path / "r")
    hcp = hcp_with(kind="classifier", classifier=str(tmp_path / "r"), guardrails=[{"label": "genui", "keywords": ["dashboard"]}])
    router = make_router(hcp, None, None)
    assert isinstance(router, ClassifierRouter)
    decision = asyncio.run(router.route(RouteRequest("python code bug")))
    assert decision.label == "coding" and decision.kind == "scored" and set(decision.scores) == set(TOPICS)
    assert asyncio.run(router.route(RouteRequest("a python dashboard"))).kind == "guardrail"

    unsure = ClassifierRouter(hcp_with(kind="classifier", classifier="x", min_confidence=0.5), router_model, hidden)
    decision = unsure.decide({"chat": 0.2, "agent": 0.1, "coding": 0.45, "genui": 0.25})
    assert decision.label == "chat" and decision.kind == "abstained" and "coding p=0.45" in decision.reason
    assert unsure.decide({"chat": 0.2, "agent": 0.0, "coding": 0.55, "genui": 0.25}).label == "coding"


def test_a_router_for_other_labels_or_another_base_is_refused(router_model, hidden, tmp_path):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["specialists"] = data["specialists"][:3]
    data["router"].update(kind="classifier", classifier="x")
    with pytest.raises(RouterFileError, match="trained for labels"):
        ClassifierRouter(parse_hcp(data), router_model, hidden)
    data = tomllib.loads(default_hcp_path().read_text())
    data["router"].update(kind="classifier", classifier="x")
    with pytest.raises(RouterFileError, match="features of base 'tiny'"):
        ClassifierRouter(parse_hcp(data), router_model, hidden)
    with pytest.raises(RouterFileError, match="reads layer 2"):
        router_model.features(HiddenStateFeatures("tiny", 1))
    with pytest.raises(RouterFileError, match="cannot read the router"):
        RouterModel.load(tmp_path / "missing")
    with pytest.raises(HCPError, match="needs router.classifier"):
        hcp_with(kind="classifier")


def test_routing_sets_and_traffic(tmp_path):
    hcp = hcp_with()
    train = routing_set(hcp, "train", 5)
    assert set(train.labels) == set(TOPICS) and len(train) == 20 + sum(len(s.examples) for s in hcp.specialists)
    held = routing_set(hcp, "heldout", 5)
    assert len(held) == 20 and not {r.text for r in held.requests} & {r.text for r in train.requests}
    assert any(r.tools for r in train.requests)  # the agent family's turns keep their offered functions
    outside = outside_set(hcp, "heldout", 3)
    assert len(outside) == 12 and set(outside.labels) == set(TOPICS)
    log = tmp_path / "traffic.jsonl"
    log.write_text('{"text": "ship it", "label": "agent"}\n\n{"text": "go", "label": "agent", "tools": [{"type": "function"}], "messages": [{"role": "user", "content": "go"}]}\n')
    logged = read_traffic(log, list(TOPICS))
    assert logged.labels == ["agent", "agent"] and logged.requests[0] == RouteRequest("ship it")
    assert logged.requests[1].tools == ({"type": "function"},) and logged.requests[1].messages == ({"role": "user", "content": "go"},)
    for bad in ('{"text": "ship it", "label": "weather"}', '{"text": "ship it", "label": "agent", "tools": "all"}'):
        log.write_text(bad + "\n")
        with pytest.raises(ValueError, match="traffic.jsonl:1"):
            read_traffic(log, list(TOPICS))


@pytest.mark.embedded
def test_a_request_for_an_offered_function_goes_to_the_agent(embedded):
    """A router trained quickly (a slice of the families and the outside-style train split) on
    the embedded model, asked about a function in no training set: the request for it goes to
    the agent, while the same function offered next to a history question or a coding request
    does not. Without the structure features the ride request went to genui or chat."""
    hcp = load_hcp()
    train = routing_set(hcp, "train", 60) + outside_set(hcp, "train", 120)
    features = RouteFeatures(HiddenStateFeatures("embedded", 16))
    model = train_router(train.requests, train.labels, [s.label for s in hcp.specialists], features)
    turns = [
        RouteRequest("Can you get me a gondola from the Rialto stop?", (RIDE,)),
        RouteRequest("Who built the Rialto bridge, and when?", (RIDE,)),
        RouteRequest("Write a Python function that returns the cheapest gondola fare from a list of fares.", (RIDE,)),
    ]
    assert model.predict(features(turns)) == ["agent", "chat", "coding"]
