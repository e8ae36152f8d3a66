"""``business``: multi-step business tasks as RL episodes, acted out by the proxy's own harness.

Each problem is a task of ``molt.families.business`` in one action mode (the modes alternate by
problem): the observation is the agent's view under the HCP with the mode's tools (the world's
functions, or the one ``python`` tool); each action that calls them is run by an
``ActionHarness`` (``molt.harness.actions``: the same object the proxy acts with; code runs in
a sandboxed session of the episode's own) and its results come back in the next observation. The
reward is 1 for the task's exact answer in a final reply (``right_answer``); a malformed or cut
off turn, a call the mode does not offer, or running out of steps ends the episode with 0.
"""

import hashlib
import tempfile
import uuid
from pathlib import Path

from molt.families.base import Split
from molt.families.business import MODES, Task, right_answer, tasks, world_of
from molt.families.business_world import World
from molt.forge.envs import Env, EnvGroupBuilder, ProblemDataset, StepResult
from molt.harness.actions import ActionHarness, LocalFunctions
from molt.hcp.contract import HCP
from molt.models.renderer import Renderer
from molt.proxy.views import own_view


class BusinessEnv(Env):
    def __init__(self, task: Task, mode: str, world: World, harness: ActionHarness, system: str, label: str, renderer: Renderer):
        self.task, self.mode, self.world, self.harness, self.renderer = task, mode, world, harness, renderer
        self.messages = own_view([{"role": "system", "content": system}], [], label, [{"role": "user", "content": task.question}])
        self.tools = harness.tools(mode)
        self.stop_token_ids = renderer.stop_token_ids
        self.session, self.steps = uuid.uuid4().hex, 0

    def initial_observation(self) -> list[int]:
        return self.renderer.generation_prompt(self.messages, self.tools)

    def end(self, reward: float, **metrics: float) -> StepResult:
        self.harness.substrate.drop(self.session)
        return StepResult(reward, True, metrics={"steps": float(self.steps), "repl": float(self.mode == "repl"), **metrics})

    def step(self, action: list[int]) -> StepResult:
        self.steps += 1
        parsed = self.renderer.parse_response(action)
        if not parsed.complete or parsed.errors:
            return self.end(0.0, malformed=1.0)
        calls = parsed.message.get("tool_calls") or []
        if not calls:
            return self.end(float(right_answer(parsed.message.get("content") or "", self.task.expected, self.world)))
        if self.steps >= self.harness.policy.max_steps or any(c["function"]["name"] not in self.harness.names(self.mode) for c in calls):
            return self.end(0.0)
        results = [self.harness.execute(call, self.session, f"{self.session}:{self.steps}:{i}") for i, call in enumerate(calls)]
        self.messages += [parsed.message, *results]
        return StepResult(0.0, False, next_observation=self.renderer.generation_prompt(self.messages, self.tools))


class BusinessProblem(EnvGroupBuilder):
    def __init__(self, task: Task, mode: str, world: World, harness: ActionHarness, system: str, label: str, renderer: Renderer):
        self.args = (task, mode, world, harness, system, label, renderer)

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.args[0].question}|{self.args[1]}".encode()).hexdigest()[:12]

    def make_envs(self, n: int) -> list[Env]:
        return [BusinessEnv(*self.args) for _ in range(n)]


class BusinessDataset(ProblemDataset):
    def __init__(self, split: Split, size: int, hcp: HCP, label: str, renderer: Renderer, seed: int = 0):
        world = world_of(split)
        self.root = tempfile.TemporaryDirectory(prefix="molt-rl-sessions-")
        # every episode of a batch keeps its session alive to the end: room for all of them at once
        policy = hcp.actions.model_copy(update={"sessions": max(hcp.actions.sessions, 256)})
        self.harness = ActionHarness(LocalFunctions(world.call, world.schemas), policy, Path(self.root.name))
        system = hcp.system_prompt(label)
        self.cases = [BusinessProblem(task, MODES[i % len(MODES)], world, self.harness, system, label, renderer) for i, task in enumerate(tasks(split, size, seed))]

    def problems(self) -> list[EnvGroupBuilder]:
        return list(self.cases)
