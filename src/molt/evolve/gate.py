"""The gate: does the candidate pair beat the incumbent on the target, and lose nowhere else?

Every figure is paired: both pairs answer the same held-out cases, and the test resamples cases
(with replacement, the same draw for both) to put an interval on the mean difference. The
target passes when the interval's lower bound exceeds its minimum gain; a guard passes unless the
interval shows a loss beyond its margin (non-inferiority). Latency is a ratio of means, resampled
the same way. The candidate is promoted only when every check passes.
"""

from dataclasses import asdict, dataclass, field

import numpy as np

from molt.evolve.contract import Contract, Test


@dataclass(frozen=True)
class PairScores:
    """One pair's per-case results under a contract."""

    suites: dict[str, list[float]]
    """Specialist → the suite metric of each case, in suite order."""
    routing: list[float] = field(default_factory=list)
    """1.0 where the routed system picked the case's specialist, over the routing cases."""
    latency: list[float] = field(default_factory=list)
    """Seconds per routed turn, over the same cases."""
    reused: dict[str, str] = field(default_factory=dict)
    """Specialist → why its results were taken over rather than measured (same adapter and prompt)."""
    batched: list[str] = field(default_factory=list)
    """Specialists whose answers both pairs shared, answered many at a time: a later comparison
    against a changed specialist answers the incumbent again, one case at a time."""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "PairScores":
        return cls(data["suites"], data.get("routing", []), data.get("latency", []), data.get("reused", {}), data.get("batched", []))


@dataclass(frozen=True)
class Check:
    name: str
    """``target:agent``, ``guard:chat``, ``guard:routing``, ``guard:latency``."""
    before: float
    after: float
    low: float
    high: float
    """The interval on after − before (latency: on after / before)."""
    threshold: str
    passed: bool
    n: int
    note: str = ""

    @property
    def delta(self) -> float:
        return self.after / self.before if self.name == "guard:latency" and self.before else self.after - self.before


@dataclass(frozen=True)
class Verdict:
    promote: bool
    checks: list[Check]

    @property
    def reason(self) -> str:
        failed = [c.name for c in self.checks if not c.passed]
        return "promote: every check passed" if self.promote else f"reject: {', '.join(failed)} failed"

    def to_json(self) -> dict:
        return {"promote": self.promote, "reason": self.reason, "checks": [asdict(c) for c in self.checks]}


def resample_indices(n: int, test: Test) -> np.ndarray:
    """``resamples`` × ``n`` case indices, the same for every figure of one gate."""
    return np.random.default_rng(test.seed).integers(0, n, size=(test.resamples, n))


def paired_difference(before: list[float], after: list[float], test: Test) -> tuple[float, float, float]:
    """Mean of after − before and its bootstrap interval at ``test.confidence``."""
    a, b = np.asarray(before, float), np.asarray(after, float)
    if a.shape != b.shape or not len(a):
        raise ValueError(f"paired figures need the same non-empty cases: {len(a)} before, {len(b)} after")
    diffs = b - a
    means = diffs[resample_indices(len(diffs), test)].mean(axis=1)
    tail = (1 - test.confidence) / 2
    return float(diffs.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def paired_ratio(before: list[float], after: list[float], test: Test) -> tuple[float, float, float]:
    """mean(after) / mean(before) and its bootstrap interval."""
    a, b = np.asarray(before, float), np.asarray(after, float)
    if a.shape != b.shape or not len(a):
        raise ValueError(f"paired figures need the same non-empty cases: {len(a)} before, {len(b)} after")
    idx = resample_indices(len(a), test)
    ratios = b[idx].mean(axis=1) / np.maximum(a[idx].mean(axis=1), 1e-9)
    tail = (1 - test.confidence) / 2
    return float(b.mean() / max(a.mean(), 1e-9)), float(np.quantile(ratios, tail)), float(np.quantile(ratios, 1 - tail))


def judge(contract: Contract, target: str, incumbent: PairScores, candidate: PairScores) -> Verdict:
    """Every check of the contract for a candidate that means to improve ``target``."""
    contract.suite(target)  # a clear error when the contract does not cover the target
    test, checks = contract.test, []
    for suite in contract.suites:
        before, after = incumbent.suites[suite.specialist], candidate.suites[suite.specialist]
        mean, low, high = paired_difference(before, after, test)
        note = candidate.reused.get(suite.specialist, "")
        if suite.specialist == target:
            checks.append(Check(f"target:{target}", _mean(before), _mean(after), low, high, f"low > +{suite.min_gain:g}", low > suite.min_gain, len(before), note))
        else:
            checks.append(Check(f"guard:{suite.specialist}", _mean(before), _mean(after), low, high, f"low > −{suite.max_drop:g}", low > -suite.max_drop, len(before), note))
    if incumbent.routing:
        mean, low, high = paired_difference(incumbent.routing, candidate.routing, test)
        checks.append(Check("guard:routing", _mean(incumbent.routing), _mean(candidate.routing), low, high, f"low > −{contract.routing.max_drop:g}", low > -contract.routing.max_drop, len(incumbent.routing)))
    if incumbent.latency:
        ratio, low, high = paired_ratio(incumbent.latency, candidate.latency, test)
        limit = 1 + contract.latency.max_increase
        checks.append(Check("guard:latency", _mean(incumbent.latency), _mean(candidate.latency), low, high, f"high < ×{limit:g}", high < limit, len(incumbent.latency)))
    return Verdict(all(c.passed for c in checks), checks)


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0
