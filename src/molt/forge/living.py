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
from collections.abc import Iterable
from datetime import datetime, timezone

from molt.bench.living.assistants import OracleAssistant
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
        messages = session_view(self.system, self.episode.scenario.user, self.episode.sessions[:-1], self.episode.messages)
        return self.renderer.generation_prompt(messages, self.episode.tools)

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


def session_view(system: str, user: str, earlier: list[list[dict]], messages: list[dict]) -> list[dict]:
    """What the agent sees in a session: its prompt, the facts the user stated in ``earlier``
    sessions (as memory's note), then the session's own messages."""
    now = datetime.now(timezone.utc)
    said = [m["content"] for session in earlier for m in session if m["role"] == "user"]
    facts = {key: value for text in said for key, value in stated_facts(text)}  # a later statement wins, as in memory
    remembered = [Fact(user, k, v, now, now, "conversation", None, i) for i, (k, v) in enumerate(facts.items())]
    notes = [{"role": "system", "content": facts_note(remembered)}] if remembered else []
    return [{"role": "system", "content": system}, *notes, *messages]


def oracle_transcripts(split: str, seeds: Iterable[int], hcp: HCP, label: str = "agent") -> list[dict]:
    """Chat JSONL rows (``molt train sft --data``) of the oracle's sessions on ``split``'s
    scenarios, one row per session as the agent sees it here (its HCP prompt, the facts note, the
    session's messages and the apps' tools as the harness describes them): demonstrations to
    start the agent on these tasks before RL, whose rewards are all 0 until it can do some."""
    system, rows = hcp.system_prompt(label), []
    for seed in seeds:
        for scenario in scenarios(split, seed):
            episode, oracle = Episode(scenario, seed), OracleAssistant(scenario)
            tools = []
            while not episode.done:
                if len(tools) < len(episode.sessions):
                    tools.append(hcp.tools.described(episode.tools))
                episode.act(oracle(list(episode.messages), episode.tools, scenario.user, episode.session))
            for index, messages in enumerate(episode.sessions):
                last = max(i for i, m in enumerate(messages) if m["role"] == "assistant")  # the user's goodbye teaches nothing
                rows.append({"messages": session_view(system, scenario.user, episode.sessions[:index], messages[: last + 1]), "tools": tools[index]})
    return rows


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
