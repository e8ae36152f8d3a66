"""``order_refund``: a multi-turn environment with tools whose results come back as observations.

The user asks for a refund of an order they name by its item, not by its id. Two functions are
offered: ``find_order(item)`` and ``refund_order(order_id)``. The agent has to look the id up
first, read it from the tool result, then refund exactly that order: reward 1; a refund of any
other id, an answer without a refund, a malformed or cut-off turn, or running out of turns: 0.
Each turn's observation is the whole conversation so far (the agent's call and the tool's
result appended), so an episode whose turns re-render exactly as sampled is one Datum.

Held out by construction: the items (and so the requests) of ``heldout`` never occur in ``train``.
"""

import hashlib
import json
import random
from molt.families.agent import calls_of
from molt.families.base import Split
from molt.forge.envs import Env, EnvGroupBuilder, ProblemDataset, StepResult
from molt.hcp.contract import HCP
from molt.models.renderer import Renderer
from molt.proxy.views import own_view

ITEMS: dict[str, list[str]] = {
    "train": ["lamp", "kettle", "chair", "backpack", "blender", "desk", "jacket", "toaster", "monitor", "rug", "headphones", "mixer",
              "tent", "bicycle helmet", "coffee grinder", "umbrella", "mattress", "printer", "sofa cushion", "water bottle"],
    "heldout": ["telescope", "violin", "aquarium", "hammock", "sewing machine", "chess set", "projector", "canoe paddle", "lantern", "easel"],
}  # fmt: skip
ASKS = ["Please refund my {item} order.", "I want my money back for the {item} I bought.", "Can you refund the {item}? I returned it.", "Refund the order with the {item}, please."]
TOOLS = [
    {"type": "function", "function": {"name": "find_order", "description": "Find the id of the customer's order that contains an item",
     "parameters": {"type": "object", "properties": {"item": {"type": "string", "description": "The item bought"}}, "required": ["item"]}}},
    {"type": "function", "function": {"name": "refund_order", "description": "Refund an order by its id",
     "parameters": {"type": "object", "properties": {"order_id": {"type": "string", "description": "The order id, e.g. A-1234"}}, "required": ["order_id"]}}},
]  # fmt: skip


class OrderRefundEnv(Env):
    def __init__(self, request: str, item: str, order_id: str, system: str, label: str, renderer: Renderer, max_turns: int = 4):
        self.item, self.order_id, self.renderer, self.max_turns = item, order_id, renderer, max_turns
        self.messages = own_view([{"role": "system", "content": system}], [], label, [{"role": "user", "content": request}])
        self.stop_token_ids = renderer.stop_token_ids
        self.turns = 0

    def initial_observation(self) -> list[int]:
        return self.renderer.generation_prompt(self.messages, TOOLS)

    def step(self, action: list[int]) -> StepResult:
        self.turns += 1
        parsed = self.renderer.parse_response(action)
        calls = calls_of(parsed.message)
        if not parsed.complete or parsed.errors or not calls:
            return StepResult(0.0, True, metrics={"turns": self.turns, "refunded": 0.0})
        results = []
        for made, call in zip(parsed.message["tool_calls"], calls):
            arguments = call["arguments"] if isinstance(call["arguments"], dict) else {}
            if call["name"] == "refund_order":
                right = arguments.get("order_id") == self.order_id
                return StepResult(float(right), True, metrics={"turns": self.turns, "refunded": 1.0, "looked_up_first": float(self.turns > 1)})
            if call["name"] == "find_order":
                found = str(arguments.get("item", "")).strip().lower() == self.item
                result = {"order_id": self.order_id} if found else {"error": f"no order with {arguments.get('item')!r}"}
            else:
                result = {"error": f"unknown function {call['name']!r}"}
            results.append({"role": "tool", "tool_call_id": made.get("id") or f"call_{len(results)}", "content": json.dumps(result)})
        if self.turns >= self.max_turns:
            return StepResult(0.0, True, metrics={"turns": self.turns, "refunded": 0.0})
        self.messages += [parsed.message, *results]
        return StepResult(0.0, False, next_observation=self.renderer.generation_prompt(self.messages, TOOLS))


class OrderProblem(EnvGroupBuilder):
    def __init__(self, request: str, item: str, order_id: str, system: str, label: str, renderer: Renderer):
        self.args = (request, item, order_id, system, label, renderer)

    @property
    def key(self) -> str:
        return hashlib.sha256(f"{self.args[0]}|{self.args[2]}".encode()).hexdigest()[:12]

    def make_envs(self, n: int) -> list[Env]:
        return [OrderRefundEnv(*self.args) for _ in range(n)]


class OrderDataset(ProblemDataset):
    def __init__(self, split: Split, size: int, hcp: HCP, label: str, renderer: Renderer, seed: int = 0):
        rng = random.Random(f"orders:{split}:{seed}")
        system = hcp.system_prompt(label)
        self.cases = []
        for _ in range(size):
            item = rng.choice(ITEMS["heldout" if split == "heldout" else "train"])
            request = rng.choice(ASKS).format(item=item)
            self.cases.append(OrderProblem(request, item, f"{rng.choice('ABCDEFGH')}-{rng.randrange(1000, 10000)}", system, label, renderer))

    def problems(self) -> list[EnvGroupBuilder]:
        return list(self.cases)
