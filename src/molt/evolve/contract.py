"""The external contract: what a successor pair must show, on data the loop never touches.

A contract is a versioned TOML file apart from any HCP (the loop edits HCPs, never its judge).
It names, per specialist, a held-out suite (a family's split, a case count, a seed and the metric
scored per case), the minimum gain for the target specialist, a no-regression margin for every
other specialist, for routing accuracy and for turn latency, and the statistical test.

A suite is pinned by the sha256 of its cases, checked at run time: a generator that changed
under the contract is an error, not a silently different yardstick. ``check_training`` refuses
training rows that share a request or an answer with any suite.
"""

import hashlib
import json
import re
from dataclasses import dataclass
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, model_validator

from molt.families import ALL_FAMILIES, Case
from molt.hcp.contract import field_path, read_toml
from molt.hcp.v1 import LABEL, Table

VERSIONS = ("1",)


class ContractError(ValueError):
    """An unreadable or invalid contract, a suite whose cases changed, training data that overlaps a suite."""


class Suite(Table):
    specialist: str = Field(pattern=LABEL)
    """The specialist this suite measures (its label in the HCP)."""
    family: str | None = None
    """The data family the cases come from (default: the specialist's label)."""
    split: Literal["heldout", "wording"] = "heldout"
    """``heldout`` withholds functions, kinds and entities from training; ``wording`` only the templates."""
    cases: int = Field(60, ge=10)
    seed: int = 1000
    """Apart from the seeds the loop trains and searches with (they start at 0)."""
    metric: str = "score"
    """The per-case figure of the family's scorer that is compared."""
    min_gain: float = Field(0.0, ge=0)
    """As the target: the interval's lower bound on candidate − incumbent must exceed this."""
    max_drop: float = Field(0.05, ge=0)
    """As a guard: the interval's lower bound on candidate − incumbent must stay above −max_drop."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    """The cases' hash (``molt evolve --show-contract`` prints it); checked when set."""

    @property
    def family_name(self) -> str:
        return self.family or self.specialist

    @model_validator(mode="after")
    def _known_family(self) -> "Suite":
        if self.family_name not in ALL_FAMILIES:
            raise ValueError(f"family {self.family_name!r} is not one of molt's ({', '.join(ALL_FAMILIES)})")
        return self


class Test(Table):
    method: Literal["paired_bootstrap"] = "paired_bootstrap"
    """Resample the cases with replacement, the same cases for both pairs, and take the mean difference."""
    confidence: float = Field(0.9, gt=0.5, lt=1)
    """Two-sided interval level; a bound of a 90% interval is a one-sided test at 95%."""
    resamples: int = Field(2000, ge=200)
    seed: int = 0


class Routing(Table):
    cases: int = Field(20, ge=5)
    """Cases of each suite sent through the routed system (model ``molt``): routing accuracy and turn latency."""
    max_drop: float = Field(0.05, ge=0)
    """Routing accuracy: the lower bound on candidate − incumbent must stay above −max_drop."""


class Latency(Table):
    max_increase: float = Field(0.25, ge=0)
    """Mean turn latency: the upper bound of candidate / incumbent must stay below 1 + max_increase."""


class Contract(Table):
    contract_version: str
    name: str = Field(min_length=1)
    description: str = ""
    test: Test = Test()
    routing: Routing = Routing()
    latency: Latency = Latency()
    suites: list[Suite] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_suite_each(self) -> "Contract":
        labels = [s.specialist for s in self.suites]
        repeated = sorted({label for label in labels if labels.count(label) > 1})
        if repeated:
            raise ValueError(f"one suite per specialist; repeated: {', '.join(repeated)}")
        return self

    def suite(self, specialist: str) -> Suite:
        for suite in self.suites:
            if suite.specialist == specialist:
                return suite
        raise ContractError(f"the contract {self.name!r} has no held-out suite for {specialist!r} (it has {', '.join(s.specialist for s in self.suites)})")

    @cached_property
    def digest(self) -> str:
        """Names this contract's content: evaluations under another contract are never reused."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()


def default_contract_path() -> Path:
    return Path(str(resources.files("molt.evolve") / "contract.toml"))


def load_contract(path: Path | None = None) -> Contract:
    path = path or default_contract_path()
    return parse_contract(read_toml(path, ContractError), str(path))


def parse_contract(data: dict, where: str = "contract") -> Contract:
    version = data.get("contract_version")
    if version not in VERSIONS:
        raise ContractError(f"{where}: contract_version must be one of {', '.join(map(repr, VERSIONS))}, not {version!r}")
    try:
        return Contract.model_validate(data)
    except ValidationError as e:
        problems = "; ".join(f"{field_path(err['loc'])}: {err['msg']}" for err in e.errors())
        raise ContractError(f"{where}: {problems}") from None


# -- suites --------------------------------------------------------------------------------------


def suite_cases(suite: Suite) -> list[Case]:
    """The suite's cases, checked against its pinned hash."""
    cases = ALL_FAMILIES[suite.family_name].generate(suite.split, suite.cases, suite.seed)
    if suite.sha256 and cases_hash(cases) != suite.sha256:
        raise ContractError(
            f"the {suite.specialist} suite's cases changed: they hash to {cases_hash(cases)}, the contract pins {suite.sha256}; "
            "a changed yardstick needs a new contract version, not a silent swap"
        )
    return cases


def cases_hash(cases: list[Case]) -> str:
    canonical = [{"messages": c.messages, "answer": c.answer, "tools": c.tools} for c in cases]
    return hashlib.sha256(json.dumps(canonical, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


# -- overlap with training data ------------------------------------------------------------------

MIN_TEXT = 12
"""Shorter texts ("ok", "42") are shared by chance, not leaked."""


def normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def fingerprint(text: str) -> str | None:
    text = normalised(text)
    return hashlib.sha256(text.encode()).hexdigest()[:24] if len(text) >= MIN_TEXT else None


@dataclass(frozen=True)
class Overlap:
    row: int
    suite: str
    text: str


class HeldOut:
    """The fingerprints of every suite's requests and answers (the family's ``contents``)."""

    def __init__(self, contract: Contract):
        self.owner: dict[str, str] = {}
        for suite in contract.suites:
            family = ALL_FAMILIES[suite.family_name]
            for case in suite_cases(suite):
                for text in family.contents(case):
                    if (key := fingerprint(text)) is not None:
                        self.owner.setdefault(key, suite.specialist)

    def overlaps(self, rows: list[dict]) -> list[Overlap]:
        """Training rows (chat JSONL dicts) holding a user or assistant text of a suite."""
        found = []
        for i, row in enumerate(rows):
            for message in row.get("messages", []):
                content = message.get("content")
                if message.get("role") in ("user", "assistant", "tool") and isinstance(content, str):
                    key = fingerprint(content)
                    if key in self.owner:
                        found.append(Overlap(i, self.owner[key], content[:80]))
                        break
        return found

    def check(self, rows: list[dict], what: str) -> None:
        found = self.overlaps(rows)
        if found:
            first = found[0]
            raise ContractError(
                f"{what} overlaps the contract's held-out suites in {len(found)} rows (row {first.row} holds "
                f"{first.text!r} from the {first.suite} suite); the loop never trains on held-out data"
            )


def check_training(contract: Contract, rows: list[dict], what: str = "the training set") -> None:
    HeldOut(contract).check(rows, what)

