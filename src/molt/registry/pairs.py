"""(model, harness) pairs: registering what training made, and turning a pair back into the HCP
that serves it.

A pair's HCP record is the exact HCP it is served with: each trained specialist's ``revision``
is its adapter's place in the content store (``store/<hash>``, under the engine's adapters root)
and the router's folder is the stored router's, so serving a pair needs nothing but the registry.
"""

import hashlib
import math
import tomllib
from pathlib import Path

from molt.hcp import HCP, to_toml
from molt.hcp.contract import parse_hcp
from molt.mint.checkpoints import resolve
from molt.registry.registry import Entry, Registry, RegistryError
from molt.train.sft import SFTConfig, SFTResult

PRODUCTION = "production"


def register_sft(registry: Registry, config: SFTConfig, result: SFTResult, source: str, data_parents: dict[str, str] | None = None) -> Entry:
    """The dataset (made from ``data_parents``), the training job and the adapter revision of one finished SFT run."""
    base = registry.add_base(config.base_model)
    data = registry.add_dataset(Path(config.data), source, data_parents)
    settings = config.model_dump(mode="json", exclude={"data"})
    metrics = {
        "losses": result.losses, "steps": result.steps, "train_tokens": result.train_tokens,
        "eval_loss_before": result.eval_loss_before, "eval_loss_after": result.eval_loss_after,
    }
    continued = config.init_from and config.init_from.startswith("molt://store/")  # from a registered revision
    start = registry.get(f"adapter-{config.init_from.removeprefix('molt://store/')[:16]}").id if continued else None
    return registry.add_trained_adapter(resolve(result.revision), config.adapter, "sft", settings, metrics, {"base": base.id, "data": data.id}, start)


def adapter_for_revision(registry: Registry, name: str, revision: str) -> Entry:
    """The adapter record behind an HCP's revision: a stored one (``store/<hash>``) is already
    registered; a MinT revision (``molt://run/name``) is registered from its folder."""
    if revision.startswith("store/"):
        return registry.get(f"adapter-{revision.removeprefix('store/')[:16]}")
    return registry.add_adapter(resolve(revision), name)


def register_pair(registry: Registry, hcp: HCP, adapters: dict[str, Entry], router: Entry | None, derived_from: str | None = None) -> Entry:
    """A pair serving ``hcp`` with ``adapters`` (label → adapter revision) and ``router``."""
    specialists = [
        s.model_copy(update={"adapter": adapters[s.label].name, "revision": adapters[s.label].attributes["revision"]}) if s.label in adapters else s
        for s in hcp.specialists
    ]
    served = hcp.model_copy(update={"specialists": specialists})
    if router is not None:
        served = served.model_copy(update={"router": served.router.model_copy(update={"kind": "classifier", "classifier": router.attributes["folder"]})})
    base = registry.add_base(hcp.model.base)
    hcp_record = registry.add_hcp(to_toml(served), hcp.name, {"derived_from": derived_from} if derived_from else None)
    trained = {label: a.id for label, a in adapters.items()}
    return registry.add_pair(hcp.name, base.id, hcp_record.id, router.id if router else None, trained)


def wilson(rate: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval of a rate observed on ``n`` cases (95% by default)."""
    if n <= 0:
        return 0.0, 1.0
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def register_evaluation(registry: Registry, pair: str, result: dict) -> Entry:
    """A ``molt bench specialists`` result as an evaluation of ``pair``: every rate with its
    Wilson interval over the split's cases (a metric over a subset of them, such as the agent's
    exact match on call cases, has a wider true interval than this); the verdict says whether the routed system matched
    or beat the base on every held-out metric (a record, not a gate)."""
    metrics, losses = {}, []
    for split, families in result["splits"].items():
        for family, systems in families.items():
            for system, figures in systems.items():
                n = int(figures.get("n", 0))
                for name, value in figures.items():
                    if name != "n":
                        low, high = wilson(value, n)
                        metrics[f"{split}.{family}.{system}.{name}"] = {"value": value, "low": low, "high": high, "n": n}
                        if split == "heldout" and system == "routed" and value < systems["base"][name]:
                            losses.append(f"{family}.{name}")
    verdict = "pass: routed ≥ base on every held-out metric" if not losses else f"fail: routed < base on {', '.join(losses)}"
    return registry.add_evaluation("bench specialists", pair, metrics, verdict)


def pair_hcp(registry: Registry, ref: str) -> HCP:
    """The HCP a pair (or an alias naming one) is served with."""
    pair = registry.get(ref)
    if pair.kind != "pair":
        raise RegistryError(f"{ref!r} is a {pair.kind} record, not a pair")
    hcp = registry.get(pair.attributes["members"]["hcp"])
    return parse_hcp(tomllib.loads(hcp.attributes["toml"]), f"registry {hcp.id}")


def by_revision(hcp: HCP) -> HCP:
    """``hcp`` with each trained specialist's adapter named after its revision (``agent-3f2a…``):
    two pairs served by one engine, or one after the other by a running stack, never share an
    adapter name unless they share the weights, so swapping pairs never changes what a name
    serves under a request in flight."""
    specialists = [s.model_copy(update={"adapter": served_name(s.label, s.revision)}) if s.adapter and s.revision else s for s in hcp.specialists]
    return hcp.model_copy(update={"specialists": specialists})


def served_name(label: str, revision: str) -> str:
    return f"{label}-{hashlib.sha256(revision.encode()).hexdigest()[:10]}"


def with_adapter(registry: Registry, pair_ref: str, adapter_ref: str, label: str | None = None) -> Entry:
    """A new pair: ``pair_ref`` with the specialist ``label`` (default: the one whose adapter has
    this revision's name) switched to it (same base, router and other specialists)."""
    pair, adapter = registry.get(pair_ref), registry.get(adapter_ref)
    if adapter.kind != "adapter":
        raise RegistryError(f"{adapter_ref!r} is a {adapter.kind} record, not an adapter revision")
    hcp = pair_hcp(registry, pair.id)
    labels = [s.label for s in hcp.specialists if (s.label == label if label else s.adapter == adapter.name or s.label == adapter.name)]
    if not labels:
        raise RegistryError(f"no specialist of pair {pair.id} serves an adapter named {adapter.name!r} ({', '.join(s.label for s in hcp.specialists)})")
    members = pair.attributes["members"]
    adapters = {label: registry.get(a) for label, a in members["specialists"].items()} | {labels[0]: adapter}
    router = registry.get(members["router"]) if members["router"] else None
    return register_pair(registry, hcp, adapters, router, derived_from=members["hcp"])
