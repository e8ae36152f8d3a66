"""Routing data (labelled requests from the data families, the HCP's examples and logged
traffic) and fitting the classifier router on it.

The train set takes the families' ``train`` split, the HCP's ``examples`` and any traffic files
(JSONL lines ``{"text": ..., "label": ...}``, e.g. turns a client named a specialist for); the
held-out set takes only the families' ``heldout`` split, so it shares no template or draw with
training. A label with no family of the same name is learnt from examples and traffic alone.
"""

import json
import time
from pathlib import Path

from molt.datagen import FAMILIES
from molt.datagen.common import Split
from molt.hcp import HCP
from molt.router.classifier import DEFAULT_LAYER, RouterModel, train_router
from molt.router.features import HiddenStateFeatures

REQUESTS_PER_LABEL = 300
"""Requests per label from the families' train split (half as many held out for the score)."""


def routing_set(hcp: HCP, split: Split, per_label: int, seed: int = 0) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for specialist in hcp.specialists:
        if specialist.label in FAMILIES:
            requests = [case.request for case in FAMILIES[specialist.label](split, per_label, seed)]
            texts += requests
            labels += [specialist.label] * len(requests)
        if split == "train":
            texts += specialist.examples
            labels += [specialist.label] * len(specialist.examples)
    return texts, labels


def read_traffic(path: Path, known: list[str]) -> tuple[list[str], list[str]]:
    texts, labels = [], []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{number}: malformed JSON ({e.msg})") from None
        if not isinstance(row, dict) or not isinstance(row.get("text"), str) or row.get("label") not in known:
            raise ValueError(f"{path}:{number}: expected {{\"text\": str, \"label\": one of {', '.join(known)}}}")
        texts.append(row["text"])
        labels.append(row["label"])
    return texts, labels


def accuracy_report(truth: list[str], predicted: list[str], labels: list[str]) -> dict:
    """Overall and per-class accuracy, and the confusion matrix (rows: truth, columns: predicted)."""
    confusion = {t: {p: 0 for p in labels} for t in labels}
    for t, p in zip(truth, predicted):
        confusion[t][p] += 1
    per_class = {t: confusion[t][t] / max(1, sum(confusion[t].values())) for t in labels}
    accuracy = sum(t == p for t, p in zip(truth, predicted)) / max(1, len(truth))
    return {"accuracy": accuracy, "per_class": per_class, "confusion": confusion, "n": len(truth)}


def train_from_families(hcp: HCP, seed: int = 0, layer: int = DEFAULT_LAYER, traffic: tuple[list[str], list[str]] = ([], [])) -> RouterModel:
    """The router on the families' train requests, the HCP's examples and traffic; scored on held-out requests."""
    start = time.perf_counter()
    features = HiddenStateFeatures(hcp.model.base, layer)
    texts, labels = routing_set(hcp, "train", REQUESTS_PER_LABEL, seed)
    texts, labels = texts + traffic[0], labels + traffic[1]
    label_set = [s.label for s in hcp.specialists]
    router = train_router(texts, labels, label_set, features, {"train_requests": len(texts), "seed": seed})
    held_texts, held_labels = routing_set(hcp, "heldout", REQUESTS_PER_LABEL // 2, seed)
    if held_texts:
        predicted = [label_set[i] for i in router.probabilities(features(held_texts)).argmax(-1).tolist()]
        router.info["heldout"] = accuracy_report(held_labels, predicted, label_set)
    router.info["seconds"] = round(time.perf_counter() - start, 1)
    return router
