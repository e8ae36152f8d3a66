"""The trained router: a softmax classifier over the base's pooled hidden states.

Training is a full-batch L-BFGS fit of multinomial logistic regression on standardised
features (seconds for thousands of requests). The result is a folder: ``router.json`` (labels,
base, layer, what it was trained on, its held-out figures) and ``router.safetensors`` (the
standardisation and the weights). At serve time one forward of the base's first layers over the
user's text and one matrix product pick the label; a best probability under the HCP's
``min_confidence`` abstains to the default label.
"""

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from molt.hcp import HCP
from molt.home import molt_home
from molt.router.base import RouteDecision, guardrail_decision
from molt.router.features import HiddenStateFeatures

DEFAULT_LAYER = 16
WEIGHT_DECAY = 1e-3


class RouterFileError(ValueError):
    """The router folder is missing, damaged, or made for another base or label set."""


@dataclass
class RouterModel:
    labels: list[str]
    base: str
    layer: int
    mean: torch.Tensor
    std: torch.Tensor
    weight: torch.Tensor
    """(features, labels)"""
    bias: torch.Tensor
    info: dict = field(default_factory=dict)
    """What it was trained on and how it scored; saved alongside, never read back as settings."""

    def probabilities(self, features: torch.Tensor) -> torch.Tensor:
        return torch.softmax(((features - self.mean) / self.std) @ self.weight + self.bias, dim=-1)

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {"mean": self.mean, "std": self.std, "weight": self.weight, "bias": self.bias}
        save_file({k: v.contiguous() for k, v in tensors.items()}, folder / "router.safetensors")
        meta = {"format": "molt-router/1", "labels": self.labels, "base": self.base, "layer": self.layer, "info": self.info}
        (folder / "router.json").write_text(json.dumps(meta, indent=2))
        return folder

    @classmethod
    def load(cls, folder: Path) -> "RouterModel":
        try:
            meta = json.loads((folder / "router.json").read_text())
            tensors = load_file(folder / "router.safetensors")
        except (OSError, ValueError) as e:
            raise RouterFileError(f"cannot read the router at {folder}: {e}") from None
        if meta.get("format") != "molt-router/1":
            raise RouterFileError(f"{folder / 'router.json'}: not a molt router (format {meta.get('format')!r})")
        return cls(meta["labels"], meta["base"], meta["layer"], tensors["mean"], tensors["std"], tensors["weight"], tensors["bias"], meta.get("info", {}))


def router_path(name: str) -> Path:
    """An HCP's router.classifier: absolute, or relative to $MOLT_HOME."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else molt_home() / path


def fit(features: torch.Tensor, targets: torch.Tensor, n_labels: int, weight_decay: float = WEIGHT_DECAY) -> tuple[torch.Tensor, ...]:
    """Standardisation and multinomial logistic regression weights."""
    mean, std = features.mean(0), features.std(0) + 1e-5
    x = (features - mean) / std
    torch.manual_seed(0)
    weight = torch.zeros(x.shape[1], n_labels, requires_grad=True)
    bias = torch.zeros(n_labels, requires_grad=True)
    optimizer = torch.optim.LBFGS([weight, bias], max_iter=200, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(x @ weight + bias, targets) + weight_decay * weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return mean, std, weight.detach(), bias.detach()


def train_router(texts: list[str], labels: list[str], label_set: list[str], features: HiddenStateFeatures, info: dict | None = None) -> RouterModel:
    unknown = sorted(set(labels) - set(label_set))
    if unknown:
        raise ValueError(f"training labels {', '.join(unknown)} are not specialists of the HCP ({', '.join(label_set)})")
    targets = torch.tensor([label_set.index(label) for label in labels])
    mean, std, weight, bias = fit(features(texts), targets, len(label_set))
    return RouterModel(label_set, features.base, features.layer, mean, std, weight, bias, info or {})


class ClassifierRouter:
    def __init__(self, hcp: HCP, model: RouterModel | None = None, features: HiddenStateFeatures | None = None):
        self.hcp = hcp
        self.model = model or RouterModel.load(router_path(hcp.router.classifier or ""))
        labels = [s.label for s in hcp.specialists]
        if sorted(self.model.labels) != sorted(labels):
            raise RouterFileError(f"the router was trained for labels {', '.join(self.model.labels)}, the HCP has {', '.join(labels)}; retrain it (molt router train)")
        if self.model.base != hcp.model.base:
            raise RouterFileError(f"the router reads features of base {self.model.base!r}, the HCP serves {hcp.model.base!r}; retrain it")
        self.features = features or HiddenStateFeatures(self.model.base, self.model.layer)

    def scores(self, user_text: str) -> dict[str, float]:
        probabilities = self.model.probabilities(self.features([user_text]))[0]
        return {label: float(p) for label, p in zip(self.model.labels, probabilities)}

    def decide(self, user_text: str, scores: dict[str, float]) -> RouteDecision:
        best = max(scores, key=scores.get)
        if scores[best] < self.hcp.router.min_confidence:
            default = self.hcp.router.default_label
            return RouteDecision(default, f"abstained: {best} p={scores[best]:.2f} < {self.hcp.router.min_confidence}; default {default}", "abstained", scores)
        return RouteDecision(best, f"classified: {best} p={scores[best]:.2f}", "scored", scores)

    async def route(self, user_text: str) -> RouteDecision:
        forced = guardrail_decision(self.hcp.router.guardrails, user_text)
        if forced is not None:
            return forced
        return self.decide(user_text, await asyncio.to_thread(self.scores, user_text))
