"""The trained router: a softmax classifier over the base's pooled hidden states and the
turn's structure features (functions offered and how well the request matches them, tool
results, code, a UI surface; ``features.py``, ``structure.py``).

Training is a full-batch L-BFGS fit of multinomial logistic regression on standardised
features (seconds for thousands of requests). The result is a folder: ``router.json`` (labels,
base, layer, the structure features' names, what it was trained on, its held-out figures) and
``router.safetensors`` (the standardisation, the weights, and the tool cosine's calibration).
At serve time one forward of the base's first layers over the user's text (plus, once per new
tool, over its description) and one matrix product pick the label; a best probability under the
HCP's ``min_confidence`` abstains to the default label. A ``molt-router/1`` file (text features
only) still loads: it is a router with no structure features.
"""

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from molt.hcp import HCP
from molt.home import molt_home
from molt.router.base import RouteDecision, RouteRequest, guardrail_decision
from molt.router.features import HiddenStateFeatures, RouteFeatures

FORMAT = "molt-router/2"

DEFAULT_LAYER = 16
WEIGHT_DECAY = 1e-3
STRUCTURE_WEIGHT = 4.0
"""Structure features are scaled by this after standardisation, which makes their weights' L2
penalty 16x lighter: a few general signals should outweigh a thousand specific text dimensions
that happen to fit the training wording."""


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
    structure: list[str] = field(default_factory=list)
    """Names of the structure features after the hidden-state ones, in column order."""
    center: torch.Tensor | None = None
    """(hidden_size,) the tool cosine's calibration (``RouteFeatures.calibrate``); None: none."""
    scale: torch.Tensor | None = None
    info: dict = field(default_factory=dict)
    """What it was trained on and how it scored; saved alongside, never read back as settings."""

    def probabilities(self, features: torch.Tensor) -> torch.Tensor:
        return torch.softmax(((features - self.mean) / self.std) @ self.weight + self.bias, dim=-1)

    def predict(self, features: torch.Tensor) -> list[str]:
        return [self.labels[i] for i in self.probabilities(features).argmax(-1).tolist()]

    def features(self, hidden: HiddenStateFeatures) -> RouteFeatures:
        """The featuriser this router was trained with, over ``hidden`` (same base and layer)."""
        if (hidden.base, hidden.layer) != (self.base, self.layer):
            raise RouterFileError(f"the router reads layer {self.layer} of {self.base!r}, not layer {hidden.layer} of {hidden.base!r}")
        return RouteFeatures(hidden, self.structure, self.center, self.scale)

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {"mean": self.mean, "std": self.std, "weight": self.weight, "bias": self.bias}
        if self.center is not None and self.scale is not None:
            tensors |= {"center": self.center, "scale": self.scale}
        save_file({k: v.contiguous() for k, v in tensors.items()}, folder / "router.safetensors")
        meta = {"format": FORMAT, "labels": self.labels, "base": self.base, "layer": self.layer, "structure": self.structure, "info": self.info}
        (folder / "router.json").write_text(json.dumps(meta, indent=2))
        return folder

    @classmethod
    def load(cls, folder: Path) -> "RouterModel":
        try:
            meta = json.loads((folder / "router.json").read_text())
            tensors = load_file(folder / "router.safetensors")
        except (OSError, ValueError) as e:
            raise RouterFileError(f"cannot read the router at {folder}: {e}") from None
        if meta.get("format") not in (FORMAT, "molt-router/1"):
            raise RouterFileError(f"{folder / 'router.json'}: not a molt router (format {meta.get('format')!r})")
        return cls(
            meta["labels"], meta["base"], meta["layer"], tensors["mean"], tensors["std"], tensors["weight"], tensors["bias"],
            meta.get("structure", []), tensors.get("center"), tensors.get("scale"), meta.get("info", {}),
        )


def router_path(name: str) -> Path:
    """An HCP's router.classifier: absolute, or relative to $MOLT_HOME."""
    path = Path(name).expanduser()
    return path if path.is_absolute() else molt_home() / path


def fit(features: torch.Tensor, targets: torch.Tensor, n_labels: int, weight_decay: float = WEIGHT_DECAY, structure: int = 0) -> tuple[torch.Tensor, ...]:
    """Standardisation and multinomial logistic regression weights; the last ``structure``
    columns are structure features (``STRUCTURE_WEIGHT``)."""
    mean, std = features.mean(0), features.std(0) + 1e-5
    if structure:
        std[-structure:] /= STRUCTURE_WEIGHT
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


def train_router(requests: list[RouteRequest], labels: list[str], label_set: list[str], features: RouteFeatures, info: dict | None = None) -> RouterModel:
    """Fit the router on labelled turns. ``features`` is calibrated on their texts first, so it
    is ready to score held-out turns exactly as the saved router will."""
    unknown = sorted(set(labels) - set(label_set))
    if unknown:
        raise ValueError(f"training labels {', '.join(unknown)} are not specialists of the HCP ({', '.join(label_set)})")
    targets = torch.tensor([label_set.index(label) for label in labels])
    text = features.text(requests)
    features.calibrate(text)
    mean, std, weight, bias = fit(features.combine(requests, text), targets, len(label_set), structure=len(features.structure))
    return RouterModel(label_set, features.base, features.layer, mean, std, weight, bias, list(features.structure), features.center, features.scale, info or {})


class ClassifierRouter:
    def __init__(self, hcp: HCP, model: RouterModel | None = None, hidden: HiddenStateFeatures | None = None):
        self.hcp = hcp
        self.model = model or RouterModel.load(router_path(hcp.router.classifier or ""))
        labels = [s.label for s in hcp.specialists]
        if sorted(self.model.labels) != sorted(labels):
            raise RouterFileError(f"the router was trained for labels {', '.join(self.model.labels)}, the HCP has {', '.join(labels)}; retrain it (molt router train)")
        if self.model.base != hcp.model.base:
            raise RouterFileError(f"the router reads features of base {self.model.base!r}, the HCP serves {hcp.model.base!r}; retrain it")
        self.features = self.model.features(hidden or HiddenStateFeatures(self.model.base, self.model.layer))

    def scores(self, request: RouteRequest) -> dict[str, float]:
        probabilities = self.model.probabilities(self.features([request]))[0]
        return {label: float(p) for label, p in zip(self.model.labels, probabilities)}

    def decide(self, scores: dict[str, float]) -> RouteDecision:
        best = max(scores, key=scores.get)
        if scores[best] < self.hcp.router.min_confidence:
            default = self.hcp.router.default_label
            return RouteDecision(default, f"abstained: {best} p={scores[best]:.2f} < {self.hcp.router.min_confidence}; default {default}", "abstained", scores)
        return RouteDecision(best, f"classified: {best} p={scores[best]:.2f}", "scored", scores)

    async def route(self, request: RouteRequest) -> RouteDecision:
        forced = guardrail_decision(self.hcp.router.guardrails, request.text)
        if forced is not None:
            return forced
        return self.decide(await asyncio.to_thread(self.scores, request))
