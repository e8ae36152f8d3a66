"""Routing data (labelled turns from the data families, the outside-style corpus, the HCP's
examples and logged traffic) and fitting the classifier router on it.

The train set takes the families' ``train`` split, the HCP's ``examples``, the outside-style
corpus's ``train`` split (``corpus/``) and any traffic files. The router is scored on two
held-out sets, reported separately: the families' ``heldout`` split (molt's own kind of request,
with held-out functions, kinds and entities) and the corpus's ``heldout`` split (domains, styles
and languages train never uses). A label with no family of the same name is learnt from the
other sources alone.

A turn is routed on its last user message with the case's tools and conversation, so an agent
case that ends in a tool result is routed as the turn that answers it.
"""

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from molt.families import FAMILIES, Split
from molt.hcp import HCP
from molt.router import corpus
from molt.router.base import RouteRequest
from molt.router.classifier import DEFAULT_LAYER, RouterModel, train_router
from molt.router.corpus import CorpusSplit
from molt.router.features import HiddenStateFeatures, RouteFeatures

REQUESTS_PER_LABEL = 300
"""Requests per label from the families' train split (half as many held out for the score)."""
OUTSIDE_PER_LABEL = 500
"""Turns per label from the outside-style corpus's train split (half as many held out)."""


@dataclass(frozen=True)
class RouterRecipe:
    """How much the router is trained on, and what it reads."""

    per_label: int = REQUESTS_PER_LABEL
    outside_per_label: int = OUTSIDE_PER_LABEL
    layer: int = DEFAULT_LAYER
    """The base layer whose hidden states the classifier reads."""


@dataclass(frozen=True)
class RoutingSet:
    """Labelled turns."""

    requests: list[RouteRequest] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)

    def __add__(self, other: "RoutingSet") -> "RoutingSet":
        return RoutingSet(self.requests + other.requests, self.labels + other.labels)

    def __len__(self) -> int:
        return len(self.requests)


def routing_set(hcp: HCP, split: Split, per_label: int, seed: int = 0) -> RoutingSet:
    """The families' cases of ``split`` for the HCP's labels, plus the HCP's examples for train."""
    requests, labels = [], []
    for specialist in hcp.specialists:
        if specialist.label in FAMILIES:
            cases = FAMILIES[specialist.label].generate(split, per_label, seed)
            requests += [RouteRequest.of(case.messages, case.tools) for case in cases]
            labels += [specialist.label] * len(cases)
        if split == "train":
            requests += [RouteRequest(text) for text in specialist.examples]
            labels += [specialist.label] * len(specialist.examples)
    return RoutingSet(requests, labels)


def outside_set(hcp: HCP, split: CorpusSplit, per_label: int, seed: int = 0) -> RoutingSet:
    """The outside-style corpus's turns of ``split`` for the HCP's labels that it knows."""
    turns = corpus.generate(split, per_label, seed, [s.label for s in hcp.specialists])
    return RoutingSet([t.request for t in turns], [t.label for t in turns])


def read_traffic(path: Path, known: list[str]) -> RoutingSet:
    """JSONL of ``{"text", "label"}``, optionally with the turn's ``tools`` and ``messages``
    (as ``molt proxy serve --log-routes`` writes them)."""
    requests, labels = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{number}: malformed JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or row.get("label") not in known or not _optional_dicts(row, "tools", "messages"):
            raise ValueError(f"{path}:{number}: expected {{\"text\": str, \"label\": one of {', '.join(known)}}}, optionally \"tools\" and \"messages\" (lists of objects)")
        requests.append(RouteRequest(row["text"], tuple(row.get("tools") or ()), tuple(row.get("messages") or ())))
        labels.append(row["label"])
    return RoutingSet(requests, labels)


def _optional_dicts(row: dict, *keys: str) -> bool:
    return all(row.get(k) is None or (isinstance(row[k], list) and all(isinstance(x, dict) for x in row[k])) for k in keys)


def accuracy_report(truth: list[str], predicted: list[str], labels: list[str]) -> dict:
    """Overall and per-class accuracy, and the confusion matrix (rows: truth, columns: predicted)."""
    confusion = {t: {p: 0 for p in labels} for t in labels}
    for t, p in zip(truth, predicted):
        confusion[t][p] += 1
    per_class = {t: confusion[t][t] / max(1, sum(confusion[t].values())) for t in labels}
    accuracy = sum(t == p for t, p in zip(truth, predicted)) / max(1, len(truth))
    return {"accuracy": accuracy, "per_class": per_class, "confusion": confusion, "n": len(truth)}


def heldout_sets(hcp: HCP, per_label: int, seed: int = 0) -> dict[str, RoutingSet]:
    """The two held-out sets a router is scored on: ``heldout`` (the families') and ``outside``
    (the corpus's domain/style-held-out split); a set with no turns is left out."""
    sets = {"heldout": routing_set(hcp, "heldout", per_label, seed), "outside": outside_set(hcp, "heldout", per_label, seed)}
    return {name: s for name, s in sets.items() if len(s)}


def train_from_families(hcp: HCP, seed: int = 0, recipe: RouterRecipe = RouterRecipe(), traffic: RoutingSet = RoutingSet()) -> RouterModel:
    """The router on the families' train turns, the HCP's examples, the outside-style train split
    and traffic; scored on both held-out sets (``info["heldout"]``, ``info["outside"]``)."""
    start = time.perf_counter()
    features = RouteFeatures(HiddenStateFeatures(hcp.model.base, recipe.layer))
    sources = {
        "families": routing_set(hcp, "train", recipe.per_label, seed),
        "outside": outside_set(hcp, "train", recipe.outside_per_label, seed),
        "traffic": traffic,
    }
    train = sum(sources.values(), RoutingSet())
    label_set = [s.label for s in hcp.specialists]
    info = {"train_requests": len(train), "sources": {name: len(s) for name, s in sources.items()}, "seed": seed}
    router = train_router(train.requests, train.labels, label_set, features, info)
    for name, held in heldout_sets(hcp, recipe.per_label // 2, seed).items():
        router.info[name] = accuracy_report(held.labels, router.predict(features(held.requests)), label_set)
    router.info["seconds"] = round(time.perf_counter() - start, 1)
    return router
