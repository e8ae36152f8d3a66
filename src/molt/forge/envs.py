"""RL environments, in the spirit of tinker-cookbook's: an ``Env`` gives an observation and takes
an action; an ``EnvGroupBuilder`` makes the group of envs for one problem (GRPO samples a group
per problem); an ``RLDataset`` yields builders, batch by batch, from a train or held-out split.

``FamilyEnv`` turns one case of a data family (``molt.families``) into a single-turn env: the
observation is the case rendered **as the proxy serves that specialist** (the HCP's system prompt
for its label, the case's messages and offered tools, the generation prompt), and the reward is
the family's strict scorer on the parsed answer. For the agent family (``tool_calls``) that
scorer gives 1 only for the exact call, or — when no offered function fits — for a real answer
that makes no call, so an invented call earns nothing.
"""

import hashlib
import json
import random
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from molt.families import FAMILIES
from molt.families.base import Case, Family, Split
from molt.hcp.contract import HCP
from molt.models.renderer import Renderer
from molt.proxy.views import own_view


@dataclass(frozen=True)
class StepResult:
    reward: float
    done: bool
    next_observation: list[int] | None = None
    """The context for the next action when not done (it may extend the previous one)."""
    metrics: dict[str, float] = field(default_factory=dict)


class Env(ABC):
    """One episode. Single use: ``initial_observation`` once, then ``step`` until done."""

    stop_token_ids: list[int]

    @abstractmethod
    def initial_observation(self) -> list[int]: ...

    @abstractmethod
    def step(self, action: list[int]) -> StepResult: ...


class EnvGroupBuilder(ABC):
    """Makes the ``n`` envs of one problem (they share the problem, not their state)."""

    @property
    @abstractmethod
    def key(self) -> str:
        """Names the problem, the same in every run (logged per step: which data a step saw)."""

    @abstractmethod
    def make_envs(self, n: int) -> list[Env]: ...


class RLDataset(ABC):
    @abstractmethod
    def batches(self, batch_size: int, seed: int = 0) -> Iterator[list[EnvGroupBuilder]]:
        """Builders ``batch_size`` at a time, in an order fixed by ``seed`` (so a resumed run
        sees the same data in the same order)."""


class ProblemDataset(RLDataset):
    """A fixed list of problems, reshuffled each epoch by (seed, epoch)."""

    @abstractmethod
    def problems(self) -> list[EnvGroupBuilder]: ...

    def batches(self, batch_size: int, seed: int = 0) -> Iterator[list[EnvGroupBuilder]]:
        epoch = 0
        while True:
            order = self.problems()
            random.Random(f"{seed}:{epoch}").shuffle(order)
            for start in range(0, len(order) - batch_size + 1, batch_size):
                yield order[start : start + batch_size]
            epoch += 1


class FamilyEnv(Env):
    def __init__(self, family: Family, case: Case, system: str, label: str, renderer: Renderer, max_tokens: int):
        self.family, self.case, self.renderer, self.max_tokens = family, case, renderer, max_tokens
        # the proxy's own function for a specialist's view: a first turn, so no earlier turns
        self.messages = own_view([{"role": "system", "content": system}], [], label, case.messages)
        self.stop_token_ids = renderer.stop_token_ids

    def initial_observation(self) -> list[int]:
        return self.renderer.generation_prompt(self.messages, self.case.tools)

    def step(self, action: list[int]) -> StepResult:
        parsed = self.renderer.parse_response(action)
        scores = self.family.score(self.case, parsed.message)
        return StepResult(scores["score"] if parsed.complete else 0.0, True, metrics=scores | {"complete": float(parsed.complete)})


@dataclass(frozen=True)
class FamilyProblem(EnvGroupBuilder):
    family: Family
    case: Case
    system: str
    label: str
    renderer: Renderer

    @property
    def key(self) -> str:
        return hashlib.sha256(json.dumps([self.case.messages, self.case.tools], sort_keys=True).encode()).hexdigest()[:12]

    def make_envs(self, n: int) -> list[Env]:
        return [FamilyEnv(self.family, self.case, self.system, self.label, self.renderer, self.family.max_tokens) for _ in range(n)]


class FamilyDataset(ProblemDataset):
    """The cases of one family's split, served under the HCP's prompt for ``label``."""

    def __init__(self, family: str, split: Split, size: int, hcp: HCP, label: str, renderer: Renderer, seed: int = 0):
        self.family = FAMILIES[family]
        # functions described as the harness offers them ([tools] descriptions), like the prompt
        self.cases = [replace(case, tools=hcp.tools.described(case.tools)) for case in self.family.generate(split, size, seed=seed)]
        self.system, self.label, self.renderer = hcp.system_prompt(label), label, renderer

    def problems(self) -> list[EnvGroupBuilder]:
        return [FamilyProblem(self.family, case, self.system, self.label, self.renderer) for case in self.cases]
