"""The per-turn loop of the proxy (DESIGN §1.2): route → answer → summary.

- **Route:** the router picks one label for the turn (the user's text, the tools offered, the
  conversation so far), unless the caller named a specialist, or the conversation waits on tool
  results (tool stickiness: the results go back to the adapter that called the tools, with no
  route and no summary hop).
- **Answer:** the chosen specialist answers from its own view, through the engine's OpenAI chat
  API (molt engine or vLLM): ``model`` is its adapter, or the base when it has none.
- **Summary:** written by the same adapter after the answer, as a background task; a later turn
  awaits it only when another specialist's view needs it.
- **Transactions:** a ``Conversation`` is immutable. A turn returns a new one and the caller
  stores it only once the answer is delivered, so an engine error or a client that goes away
  leaves the stored conversation as it was.
- **Sampling:** the client's ``max_tokens``, ``temperature`` and ``top_p`` apply to the answer,
  ``max_tokens`` capped by the HCP's ``[generation] max_tokens``; a field the client leaves out
  takes the HCP's value. Summaries always use the HCP's own settings.
"""

import asyncio
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from molt.hcp import HCP
from molt.hcp.v1 import Generation
from molt.proxy.metrics import ProxyMetrics
from molt.proxy.views import Message, Turn, own_view
from molt.router import RouteDecision, RouteRequest, Router
from molt.router.structure import HISTORY_WINDOW


class EngineError(RuntimeError):
    """The engine failed or answered with an error; the turn did not happen."""


@dataclass(frozen=True)
class Sampling:
    """The client's sampling fields for one answer; None takes the HCP's ``[generation]`` value."""

    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None

    def engine_fields(self, generation: Generation) -> dict:
        """The answer's fields for the engine. ``generation.max_tokens`` is a bound, so the client's
        value is capped by it; the HCP's temperature and top_p are defaults, not bounds."""
        cap = generation.max_tokens if self.max_tokens is None else min(self.max_tokens, generation.max_tokens)
        return {
            "max_tokens": cap,
            "temperature": generation.temperature if self.temperature is None else self.temperature,
            "top_p": generation.top_p if self.top_p is None else self.top_p,
        }


@dataclass(frozen=True)
class Conversation:
    system: tuple[Message, ...] = ()
    """The client's system messages (the HCP's identity prompt comes first in every view)."""
    turns: tuple[Turn, ...] = ()
    pending: Turn | None = None
    """A turn whose last reply called tools; the next messages must be their results."""


@dataclass(frozen=True)
class Plan:
    conversation: Conversation
    decision: RouteDecision
    turns: tuple[Turn, ...]
    """The conversation's turns with the summaries this view needs."""
    user: Message
    earlier: tuple[Message, ...]
    """This turn's replies so far (a pending tool call and its results)."""
    view: list[Message]
    started: float
    """perf_counter() when the turn began, for the turn-time metric."""


@dataclass(frozen=True)
class TurnResult:
    message: Message
    """The assistant message delivered to the client."""
    decision: RouteDecision
    conversation: Conversation
    """The conversation after this turn: store it once the message is delivered."""
    usage: dict = field(default_factory=dict)


class TurnLoop:
    def __init__(self, hcp: HCP, router: Router, engine: httpx.AsyncClient, summaries: bool = True, route_log: Path | None = None):
        self.hcp, self.router, self.engine, self.write_summaries = hcp, router, engine, summaries
        self.route_log = route_log
        """Opt-in JSONL of routed user turns ({"text", "label", "kind"}, and the turn's "tools" and
        recent "messages" when it has them): traffic to retrain the router on."""
        self.summaries: dict[str, asyncio.Task] = {}
        """Summaries being written, by turn id; each leaves when done (the turn keeps its result)."""
        self.metrics = ProxyMetrics()

    def model_for(self, label: str) -> str:
        return self.hcp.specialist(label).adapter or self.hcp.model.base

    def system(self, system: tuple[Message, ...], label: str) -> list[Message]:
        return [{"role": "system", "content": self.hcp.system_prompt(label)}, *system]

    async def run(
        self, conversation: Conversation, current: list[Message], tools: list[dict] | None = None, label: str | None = None, sampling: Sampling = Sampling()
    ) -> TurnResult:
        """One turn: ``current`` is the new user message, or the tool results for a pending turn."""
        plan = await self.plan(conversation, current, label, tools)
        message, usage = await self.answer(plan.decision.label, plan.view, tools, sampling)
        return self.finish(plan, message, usage)

    async def plan(self, conversation: Conversation, current: list[Message], label: str | None = None, tools: list[dict] | None = None) -> "Plan":
        """Route and build the view: everything before the answer (so a stream can announce the specialist)."""
        started = time.perf_counter()
        pending = conversation.pending
        if pending is not None:
            check_tool_results(pending, current)
            decision = RouteDecision(pending.label, "tool results go back to the adapter that called the tools", "tool_results")
            user, earlier = pending.user, [*pending.replies, *current]
        else:
            if not current or current[-1].get("role") != "user":
                raise ValueError("a turn starts with a user message (or tool results for the pending tool calls)")
            start = time.perf_counter()
            request = route_request(conversation.turns, current, tools)
            decision = RouteDecision(label, "specialist named by the client", "named") if label else await self.router.route(request)
            self.metrics.observe("route", time.perf_counter() - start)
            user, earlier = current[-1], []
            if self.route_log is not None:
                log_route(self.route_log, request, decision)
        start = time.perf_counter()
        turns = await self.with_summaries(conversation.turns, decision.label)
        self.metrics.observe("summary_wait", time.perf_counter() - start)
        view = own_view(self.system(conversation.system, decision.label), turns, decision.label, [user, *earlier])
        return Plan(conversation, decision, turns, user, tuple(earlier), view, started)

    async def route_pending(self, conversation: Conversation, label: str | None = None, tools: list[dict] | None = None) -> Conversation:
        """A history this proxy never saw ends in tool calls: its results go to the specialist
        that the calling turn routes to (or the one the client names)."""
        pending = conversation.pending
        label = label or (await self.router.route(route_request(conversation.turns, [pending.user, *pending.replies], tools))).label
        return replace(conversation, pending=replace(pending, label=label))

    def finish(self, plan: "Plan", message: Message, usage: dict) -> TurnResult:
        """The conversation after the answer; a final answer gets its summary started in the background."""
        self.metrics.turn(plan.decision.label, plan.decision.kind)
        self.metrics.observe("turn", time.perf_counter() - plan.started)
        turn = Turn(plan.decision.label, plan.user, (*plan.earlier, message))
        if message.get("tool_calls"):
            return TurnResult(message, plan.decision, replace(plan.conversation, turns=plan.turns, pending=turn), usage)
        if self.write_summaries:
            task = asyncio.create_task(self.summarise(turn, plan.conversation.system, plan.turns))
            self.summaries[turn.id] = task  # in flight only, so shutdown can cancel it
            task.add_done_callback(lambda _, key=turn.id: self.summaries.pop(key, None))
            turn = replace(turn, writing=task)
        else:  # benchmarks measure the loop without the summary hop: others see the answer's start
            turn = replace(turn, summary=text_of(message)[:400])
        return TurnResult(message, plan.decision, replace(plan.conversation, turns=(*plan.turns, turn), pending=None), usage)

    async def answer_stream(self, label: str, messages: list[Message], tools: list[dict] | None, sampling: Sampling = Sampling()) -> AsyncIterator[dict]:
        """The engine's stream chunks for the answer, as they come (OpenAI chat.completion.chunk)."""
        body = {**self.answer_body(label, messages, tools, sampling), "stream": True, "stream_options": {"include_usage": True}}
        try:
            async with self.engine.stream("POST", "/chat/completions", json=body) as response:
                if response.is_error:
                    raise EngineError(f"engine answered {response.status_code}: {(await response.aread())[:300]!r}")
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        yield json.loads(line[len("data: "):])
        except httpx.HTTPError as e:
            raise EngineError(f"engine unreachable: {e}") from e

    async def with_summaries(self, turns: tuple[Turn, ...], label: str) -> tuple[Turn, ...]:
        """The turns with every summary ``label``'s view needs, awaiting those still being written."""
        done = []
        for turn in turns:
            if turn.label != label and turn.summary is None:
                # finish() gives every unsummarised turn its writing task; adopted turns come summarised
                turn = replace(turn, summary=await turn.writing, writing=None)
            done.append(turn)
        return tuple(done)

    def answer_body(self, label: str, messages: list[Message], tools: list[dict] | None, sampling: Sampling = Sampling()) -> dict:
        body = {"model": self.model_for(label), "messages": messages, **sampling.engine_fields(self.hcp.generation)}
        return {**body, "tools": tools} if tools else body

    async def answer(self, label: str, messages: list[Message], tools: list[dict] | None, sampling: Sampling = Sampling()) -> tuple[Message, dict]:
        start = time.perf_counter()
        reply = await self.chat(self.answer_body(label, messages, tools, sampling))
        self.metrics.observe("answer", time.perf_counter() - start)
        message = {k: v for k, v in reply["choices"][0]["message"].items() if v is not None}
        return message, reply.get("usage", {})

    async def summarise(self, turn: Turn, system: tuple[Message, ...], turns: tuple[Turn, ...]) -> str:
        view = own_view(self.system(system, turn.label), turns, turn.label, [turn.user, *turn.replies])
        body = {"model": self.model_for(turn.label), "messages": [*view, {"role": "user", "content": self.hcp.prompts.summary}], "max_tokens": self.hcp.generation.summary_max_tokens, "temperature": 0}
        start = time.perf_counter()
        try:
            reply = await self.chat(body)
            self.metrics.observe("summary", time.perf_counter() - start)
            return (reply["choices"][0]["message"].get("content") or "").strip()
        except Exception:  # a missing summary must never break later turns: fall back to the answer's start
            return text_of(turn.replies[-1])[:400]

    async def aclose(self) -> None:
        """Cancel summaries still being written (at shutdown)."""
        for task in self.summaries.values():
            task.cancel()
        await asyncio.gather(*self.summaries.values(), return_exceptions=True)

    async def chat(self, body: dict) -> dict:
        try:
            response = await self.engine.post("/chat/completions", json=body)
        except httpx.HTTPError as e:
            raise EngineError(f"engine unreachable: {e}") from e
        if response.is_error:
            raise EngineError(f"engine answered {response.status_code}: {response.text[:300]}")
        return response.json()


def route_request(turns: tuple[Turn, ...], current: list[Message], tools: list[dict] | None) -> RouteRequest:
    """The turn as the router sees it: every stored turn in full (each specialist's own replies,
    not the summaries other views get), then this turn's messages, and the offered tools."""
    history = [m for turn in turns for m in (turn.user, *turn.replies)]
    return RouteRequest.of([*history, *current], tools)


def log_route(path: Path, request: RouteRequest, decision: RouteDecision) -> None:
    """One JSONL line per routed turn, with the tools and as much history as the router reads."""
    row: dict = {"text": request.text, "label": decision.label, "kind": decision.kind}
    if request.tools:
        row["tools"] = list(request.tools)
    if request.history:
        row["messages"] = [*request.history[-HISTORY_WINDOW:], *request.messages[request.last_user :]]
    with path.open("a", encoding="utf-8") as log:
        log.write(json.dumps(row, ensure_ascii=False) + "\n")


def merge_delta(message: Message, delta: dict) -> None:
    """Fold one streamed OpenAI delta into ``message``: text appends, tool calls merge by index."""
    if delta.get("content"):
        message["content"] = (message.get("content") or "") + delta["content"]
    for part in delta.get("tool_calls") or []:
        calls = message.setdefault("tool_calls", [])
        while len(calls) <= part.get("index", 0):
            calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
        call = calls[part.get("index", 0)]
        call["id"] = part.get("id") or call["id"]
        function = part.get("function") or {}
        call["function"]["name"] += function.get("name") or ""
        call["function"]["arguments"] += function.get("arguments") or ""


def text_of(message: Message) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def check_tool_results(pending: Turn, current: list[Message]) -> None:
    """The results must answer exactly the pending calls, by id."""
    called = {call["id"] for call in pending.replies[-1].get("tool_calls", [])}
    answered = [m.get("tool_call_id") for m in current if m.get("role") == "tool"]
    if len(answered) != len(current) or set(answered) != called:
        raise ValueError(f"expected tool results for calls {sorted(called)}, got {answered}")
