"""``living``: the living scenarios (``molt.bench.living``) as RL episodes.

One episode is one scenario of the ``train`` split (the benchmark's held-out ``test`` split shares
no template, entity or answer with it): each action is one assistant message of the agent, tool
calls run against the scenario's world, texts go to the scripted user, and a scenario that spans
sessions starts each session as a new conversation. As the proxy would with per-user memory, a
later session's view carries the facts the user stated in earlier ones (``stated_facts``: the
memory's own rule, not the hidden profile; the scenarios say each remembered fact as "my X is Y"). The reward, at the end, is the benchmark's total:
0.7 x need + 0.3 x process. A malformed or cut-off message ends the episode with 0, as does
running past ``MAX_ACTIONS``.
"""

import hashlib
from datetime import datetime, timezone

from molt.bench.living.runner import Episode
from molt.bench.living.scenarios import Scenario, scenarios
from molt.families.base import Split
from molt.forge.envs import Env, EnvGroupBuilder, ProblemDataset, StepResult
from molt.harness.memory import Fact, facts_note, stated_facts
from molt.hcp.contract import HCP
from molt.models.renderer import Renderer

MAX_ACTIONS = 24
"""Assistant messages per episode (turns and tool rounds together): a bound on sampling cost."""


class LivingEnv(Env):
    def __init__(self, scenario: Scenario, system: str, renderer: Renderer, seed: int = 0):
        self.episode, self.system, self.renderer, self.actions = Episode(scenario, seed), system, renderer, 0
        self.stop_token_ids = renderer.stop_token_ids

    def view(self) -> list[int]:
        earlier = [m["content"] for session in self.episode.sessions[:-1] for m in session if m["role"] == "user"]
        now = datetime.now(timezone.utc)
        facts = {key: value for text in earlier for key, value in stated_facts(text)}  # a later statement wins, as in memory
        remembered = [Fact(self.episode.scenario.user, k, v, now, now, "conversation", None, i) for i, (k, v) in enumerate(facts.items())]
        notes = [{"role": "system", "content": facts_note(remembered)}] if remembered else []
        return self.renderer.generation_prompt([{"role": "system", "content": self.system}, *notes, *self.episode.messages], self.episode.tools)

    def initial_observation(self) -> list[int]:
        return self.view()

    def step(self, action: list[int]) -> StepResult:
        self.actions += 1
        parsed = self.renderer.parse_response(action)
        if not parsed.complete or parsed.errors:
            return StepResult(0.0, True, metrics={"malformed": 1.0, "actions": float(self.actions)})
        self.episode.act(parsed.message)
        if self.episode.done or self.actions >= MAX_ACTIONS:
            score = self.episode.result().score
            total = score.total if self.episode.done else 0.0
            return StepResult(total, True, metrics={"need": score.need, "process": score.process, "actions": float(self.actions), "finished": float(self.episode.done)})
        return StepResult(0.0, False, next_observation=self.view())


class LivingProblem(EnvGroupBuilder):
    def __init__(self, scenario: Scenario, system: str, renderer: Renderer, seed: int):
        self.scenario, self.system, self.renderer, self.seed = scenario, system, renderer, seed

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.scenario.id}|{self.seed}".encode()).hexdigest()[:12]

    def make_envs(self, n: int) -> list[Env]:
        return [LivingEnv(self.scenario, self.system, self.renderer, self.seed) for _ in range(n)]


class LivingDataset(ProblemDataset):
    """``size`` scenarios of the living ``train`` split, or of the benchmark's ``test`` split for
    ``heldout`` (cycled with new wordings, by seed, when ``size`` is larger)."""

    def __init__(self, split: Split, size: int, hcp: HCP, label: str, renderer: Renderer, seed: int = 0):
        living = "test" if split == "heldout" else "train"
        system = hcp.system_prompt(label)
        self.cases, round_ = [], 0
        while len(self.cases) < size:
            for scenario in scenarios(living, seed + round_)[: size - len(self.cases)]:
                self.cases.append(LivingProblem(scenario, system, renderer, seed + round_))
            round_ += 1

    def problems(self) -> list[EnvGroupBuilder]:
        return list(self.cases)
