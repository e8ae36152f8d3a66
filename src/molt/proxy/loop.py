"""The per-turn loop of the proxy (DESIGN §1.2): route → answer → summary.

- **Route:** the router picks one label for the turn (the user's text, the tools offered, the
  conversation so far), unless the caller named a specialist, or the conversation waits on tool
  results (tool stickiness: the results go back to the adapter that called the tools, with no
  route and no summary hop), or the turn is a UI action (A2UI client event), which goes to the
  specialist whose answer made the surface, with private values withheld (``proxy.surfaces``).
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
- **Limits:** every view fits ``[model] context_window`` minus the answer's ``max_tokens`` (see
  ``views.Window``). A tool call to a function the client did not offer, or outside a non-empty
  ``[tools] allowlist``, never reaches the client: it goes back to the specialist as a tool
  error, up to ``[tools] max_repairs`` times, and then the specialist answers without tools.
- **Actions:** with the HCP's tool proxies, the harness (``molt.harness.actions``) acts in the
  turns of ``[actions] specialists``: it offers the proxies as functions or the one ``python``
  tool (``[actions] mode``, per turn), runs the specialist's calls of them or its code in the
  conversation's sandboxed session, and asks again until the specialist answers the user; its
  steps stay in the turn, so the specialist's own view of later turns holds them.
- **Surfaces:** an answer that is A2UI messages reaches the client only once it validates
  (``molt.ui.a2ui``). Its problems go back to the specialist, up to ``[ui] repairs`` times; a
  surface that never validates becomes plain text with a notice. A trivial slip (a code fence) is
  fixed and logged. A streamed surface is held back until it has been checked.
"""

import asyncio
import json
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import httpx

from molt.engine.adapter_client import model_name
from molt.harness.actions import REPL, ActionHarness
from molt.harness.memory import Fact, extracted_facts, facts_note, relevant, stated_facts
from molt.harness.memory_search import HiddenStateSimilarity
from molt.hcp import HCP
from molt.hcp.v1 import Generation
from molt.proxy.metrics import ProxyMetrics
from molt.proxy.surfaces import action_turn, conversation_surfaces
from molt.models.renderer import Renderer
from molt.proxy.views import Message, Turn, Window, own_view, text_of, turn_block
from molt.router import RouteDecision, RouteRequest, Router
from molt.router.structure import HISTORY_WINDOW
from molt.ui.a2ui import Problem, check_answer

log = logging.getLogger("molt.proxy")
SURFACE_START = re.compile(r"^\s*(```(json|jsonl)?\s*)?[\[{]")
"""How an answer that may be A2UI messages begins; streamed, it is held back until checked."""
A2UI_KEYS = re.compile(r'"(createSurface|updateComponents|updateDataModel|deleteSurface)"\s*:')


class EngineError(RuntimeError):
    """The engine failed or answered with an error; the turn did not happen. ``status`` is what the
    client gets: the engine's own 4xx (a bad request stays the client's), else 503 (unreachable) or 502."""

    def __init__(self, message: str, status: int = 502):
        super().__init__(message)
        self.status = status

    @classmethod
    def of_response(cls, status: int, text: str) -> "EngineError":
        try:
            message = json.loads(text)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            message = text[:300]
        return cls(f"engine answered {status}: {message}", status if 400 <= status < 500 else 502)


class ContextTooLong(ValueError):
    """This turn's own messages do not fit the context window, whatever is cut from the past."""


@dataclass(frozen=True)
class Answer:
    message: Message
    usage: dict = field(default_factory=dict)
    finish_reason: str = "stop"


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
    session: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Names the conversation's sandboxed session (``molt.harness``); a branch gets its own copy."""


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
    tools: list[dict] | None
    """The client's tools the specialist may call (the allowlist applied)."""
    sampling: Sampling
    started: float
    """perf_counter() when the turn began, for the turn-time metric."""
    timings: dict[str, float] = field(default_factory=dict)
    """Seconds spent per hop before the answer: route, summary_wait."""
    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    """Names this turn to the client (``x-molt-turn-id``), in the experience log and in the stored conversation."""
    checks: dict[str, dict] = field(default_factory=dict)
    """What the harness checked in the answer, told to the client (``molt.checks``): ``surface``:
    ``{outcome: valid | fell_back, repairs, slip_fixed}``, and the last ``problem`` when it fell
    back; ``actions``: ``{mode, model_calls, executed}`` when the harness acted in the turn."""
    mode: str | None = None
    """The turn's action mode (``function_calling`` or ``repl``), None when the harness stays out."""
    session: str = ""
    """The sandboxed session this turn acts in (the conversation's own, or a branch's copy)."""
    loop: "TurnLoop | None" = field(default=None, repr=False, compare=False)
    """The loop that planned the turn: its HCP, router and pair answer the whole turn, even when
    the proxy switches to another pair meanwhile."""
    acted: list[Message] = field(default_factory=list)
    """The harness's steps of this turn (its calls and their results), kept in the turn's replies."""
    user_id: str | None = None
    """The request's ``user``: what they say about themselves is remembered under it."""


@dataclass(frozen=True)
class TurnResult:
    message: Message
    """The assistant message delivered to the client."""
    decision: RouteDecision
    conversation: Conversation
    """The conversation after this turn: store it once the message is delivered."""
    usage: dict = field(default_factory=dict)


class TurnLoop:
    def __init__(
        self, hcp: HCP, router: Router, engine: httpx.AsyncClient, renderer: Renderer, summaries: bool = True, route_log: Path | None = None,
        harness: ActionHarness | None = None,
    ):
        self.hcp, self.router, self.engine, self.renderer, self.write_summaries = hcp, router, engine, renderer, summaries
        self.harness = harness
        """Acts for the model with the HCP's tool proxies (function calls or the REPL); None without proxies."""
        self.route_log = route_log
        """Opt-in JSONL of routed user turns ({"text", "label", "kind"}, and the turn's "tools" and
        recent "messages" when it has them): traffic to retrain the router on."""
        self.summaries: dict[str, asyncio.Task] = {}
        """Summaries being written, by turn id; each leaves when done (the turn keeps its result)."""
        self.metrics = ProxyMetrics()
        self.pair: str | None = None
        """The registry pair this loop serves (named in the experience log), None for an HCP file."""
        self.similarity = meaning_search(router)
        """Ranks remembered facts by meaning with the router's hidden states (a classifier router's only)."""

    def model_for(self, label: str) -> str:
        return model_name(self.hcp.model.engine_kind, self.hcp.model.base, self.hcp.specialist(label).adapter)

    def system(self, system: tuple[Message, ...], label: str, note: str | None = None) -> list[Message]:
        """The specialist's prompt, the user's remembered facts (``note``), the client's system messages."""
        remembered = [{"role": "system", "content": note}] if note else []
        return [{"role": "system", "content": self.hcp.system_prompt(label)}, *remembered, *system]

    def memory_note(self, remembered: list[Fact], user: Message) -> str | None:
        """The facts relevant to this turn within ``[memory] budget_tokens``, as one note (None: none)."""
        if not remembered:
            return None
        def size(note: str) -> int:
            return self.tokens([{"role": "system", "content": note}])

        try:
            chosen = relevant(list(remembered), text_of(user), self.hcp.memory.budget_tokens, size, self.similarity)
        except Exception as e:  # meaning search never costs a turn: rank by shared words alone
            log.warning("memory: ranking by meaning failed (%s); ranking by words", e)
            chosen = relevant(list(remembered), text_of(user), self.hcp.memory.budget_tokens, size)
        return facts_note(chosen) if chosen else None

    async def run(
        self, conversation: Conversation, current: list[Message], tools: list[dict] | None = None, label: str | None = None, sampling: Sampling = Sampling()
    ) -> TurnResult:
        """One turn: ``current`` is the new user message, or the tool results for a pending turn."""
        plan = await self.plan(conversation, current, label, tools, sampling)
        return self.finish(plan, await self.answer(plan))

    async def plan(
        self, conversation: Conversation, current: list[Message], label: str | None = None, tools: list[dict] | None = None, sampling: Sampling = Sampling(),
        remembered: list[Fact] = (), user_id: str | None = None,
    ) -> "Plan":
        """Route and build the view: everything before the answer (so a stream can announce the
        specialist). ``remembered``: the facts about ``user_id`` (the request's ``user``); the
        relevant ones join the view."""
        started, timings = time.perf_counter(), {}
        pending = conversation.pending
        if pending is not None:
            check_tool_results(pending, current)
            decision = RouteDecision(pending.label, "tool results go back to the adapter that called the tools", "tool_results")
            user, earlier = pending.user, [*pending.replies, *current]
        else:
            if not current or current[-1].get("role") != "user":
                raise ValueError("a turn starts with a user message (or tool results for the pending tool calls)")
            start = time.perf_counter()
            user, earlier = current[-1], []
            action = action_turn(user, conversation.turns)
            if action is not None:  # a UI action: to the surface's own specialist, private values withheld
                owner, user = action
                decision = RouteDecision(owner, "a UI action goes to the specialist whose surface it came from", "surface_action")
            else:
                request = route_request(conversation.turns, current, tools)
                decision = RouteDecision(label, "specialist named by the client", "named") if label else await self.route(request)
                if self.route_log is not None:
                    log_route(self.route_log, request, decision)
            timings["route"] = time.perf_counter() - start
            self.metrics.observe("route", timings["route"])
        start = time.perf_counter()
        turns = await self.with_summaries(conversation.turns, decision.label)
        timings["summary_wait"] = time.perf_counter() - start
        self.metrics.observe("summary_wait", timings["summary_wait"])
        allowed, mode, session = self.allowed(tools), None, conversation.session
        if self.harness is not None:
            mode = self.harness.mode_for(decision.label, text_of(user))
            allowed = [*(allowed or []), *self.harness.tools(mode)] or None
            session = await asyncio.to_thread(self.harness.session_for, conversation.session, len(conversation.turns)) if mode else session
        max_tokens = sampling.engine_fields(self.hcp.generation)["max_tokens"]
        note = await asyncio.to_thread(self.memory_note, remembered, user) if remembered else None
        view = await self.fitted(self.system(conversation.system, decision.label, note), turns, decision.label, [user, *earlier], allowed, max_tokens)
        return Plan(conversation, decision, turns, user, tuple(earlier), view, allowed, sampling, started, timings, mode=mode, session=session, loop=self, user_id=user_id)

    async def route(self, request: RouteRequest) -> RouteDecision:
        try:
            return await self.router.route(request)
        except httpx.HTTPStatusError as e:
            raise EngineError(f"the router's engine call failed: {e.response.status_code}", 502) from e
        except httpx.HTTPError as e:
            raise EngineError(f"the router could not reach the engine: {e}", 503) from e

    def allowed(self, tools: list[dict] | None) -> list[dict] | None:
        """The offered tools the specialists may call (all of them, or those on a non-empty
        allowlist), with the HCP's own descriptions of them."""
        allowlist = self.hcp.tools.allowlist
        kept = [t for t in tools or [] if not allowlist or tool_name(t) in allowlist]
        return self.hcp.tools.described(kept) or None

    async def fitted(self, system: list[Message], turns: tuple[Turn, ...], label: str, current: list[Message], tools: list[dict] | None, max_tokens: int) -> list[Message]:
        """``own_view`` cut to fit ``context_window - max_tokens``: the adapter's own oldest turns
        collapse to their summaries first, then the oldest turns drop out; the smallest cut wins."""
        room = self.hcp.model.context_window - max_tokens
        fixed = len(self.renderer.generation_prompt([*system, *current], tools))
        if fixed > room:
            raise ContextTooLong(f"this turn needs {fixed} prompt tokens; the context window of {self.hcp.model.context_window} leaves {room} with max_tokens={max_tokens}")
        sizes = [self.tokens(turn_block(turn, label)) for turn in turns]
        window, done = Window(), list(turns)
        for index, turn in enumerate(turns):
            if fixed + sum(sizes) <= room:
                break
            if turn.label == label:
                if done[index].summary is None:
                    done[index] = replace(turn, summary=await turn.writing, writing=None)
                sizes[index] = self.tokens(turn_block(done[index], label, verbatim=False))
                self.metrics.cut("collapsed")
            window = Window(collapsed=index + 1)
        for index in range(len(turns)):
            if fixed + sum(sizes) <= room:
                break
            sizes[index] = 0
            window = Window(dropped=index + 1, collapsed=len(turns))
            self.metrics.cut("dropped")
        return own_view(system, done, label, current, window)

    def tokens(self, messages: list[Message]) -> int:
        return sum(map(self.renderer.message_tokens, messages))

    async def route_pending(self, conversation: Conversation, label: str | None = None, tools: list[dict] | None = None) -> Conversation:
        """A history this proxy never saw ends in tool calls: its results go to the specialist
        that the calling turn routes to (or the one the client names)."""
        pending = conversation.pending
        label = label or (await self.router.route(route_request(conversation.turns, [pending.user, *pending.replies], tools))).label
        return replace(conversation, pending=replace(pending, label=label))

    def finish(self, plan: "Plan", answer: Answer) -> TurnResult:
        """The conversation after the answer; a final answer gets its summary started in the background."""
        message, usage = answer.message, answer.usage
        self.metrics.turn(plan.decision.label, plan.decision.kind)
        self.metrics.observe("turn", time.perf_counter() - plan.started)
        turn = Turn(plan.decision.label, plan.user, (*plan.earlier, *plan.acted, message), id=plan.turn_id)
        conversation = replace(plan.conversation, session=plan.session or plan.conversation.session)
        if message.get("tool_calls"):
            return TurnResult(message, plan.decision, replace(conversation, turns=plan.turns, pending=turn), usage)
        if self.write_summaries:
            task = asyncio.create_task(self.summarise(turn, plan.conversation.system, plan.turns))
            self.summaries[turn.id] = task  # in flight only, so shutdown can cancel it
            task.add_done_callback(lambda _, key=turn.id: self.summaries.pop(key, None))
            turn = replace(turn, writing=task)
        else:  # benchmarks measure the loop without the summary hop: others see the answer's start
            turn = replace(turn, summary=stand_in_summary(message))
        return TurnResult(message, plan.decision, replace(conversation, turns=(*plan.turns, turn), pending=None), usage)

    async def answer_stream(self, plan: "Plan") -> AsyncIterator[dict]:
        """The engine's stream chunks for the answer, as they come (OpenAI chat.completion.chunk).
        Once a tool call or a surface starts, the rest is held back until it is checked; a refused
        call or an invalid surface is repaired and the repaired answer comes as one last chunk."""
        if plan.mode is not None:  # the harness's steps run first; the finished answer comes as one chunk
            answer = await self.answer(plan)
            delta = {k: v for k, v in answer.message.items() if k in ("content", "tool_calls") and v}
            if "tool_calls" in delta:
                delta["tool_calls"] = [{**call, "index": i} for i, call in enumerate(delta["tool_calls"])]
            yield {"choices": [{"index": 0, "delta": delta, "finish_reason": answer.finish_reason}], "usage": answer.usage}
            return
        body = {**self.answer_body(plan.decision.label, plan.view, plan.tools, plan.sampling), "stream": True, "stream_options": {"include_usage": True}}
        streamed, held = Answer({"role": "assistant"}), []
        async for chunk in self.engine_stream(body):
            streamed, held = fold(streamed, chunk), [*held, chunk]
            if not (plan.tools and streamed.message.get("tool_calls")) and not may_be_surface(streamed.message.get("content") or ""):
                for ready in held:
                    yield ready
                held = []
        if not held:
            return
        answer = await self.checked(plan, streamed)
        if answer.message is streamed.message:
            for chunk in held:
                yield chunk
            return
        delta = {k: v for k, v in answer.message.items() if k in ("content", "tool_calls")}
        delta["tool_calls"] = [{**call, "index": i} for i, call in enumerate(delta.get("tool_calls", []))] or None
        yield {"choices": [{"index": 0, "delta": {k: v for k, v in delta.items() if v}, "finish_reason": answer.finish_reason}], "usage": answer.usage}

    async def engine_stream(self, body: dict) -> AsyncIterator[dict]:
        try:
            async with self.engine.stream("POST", "/chat/completions", json=body) as response:
                if response.is_error:
                    raise EngineError.of_response(response.status_code, (await response.aread()).decode(errors="replace"))
                async for line in response.aiter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        chunk = json.loads(line[len("data: ") :])
                        if "error" in chunk:  # the engine failed after the stream started
                            raise EngineError(f"engine failed mid-stream: {chunk['error'].get('message', chunk['error'])}", 502)
                        yield chunk
        except httpx.HTTPError as e:
            raise EngineError(f"engine unreachable: {type(e).__name__} {e}".rstrip(), 503) from e

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

    async def answer(self, plan: "Plan") -> Answer:
        start = time.perf_counter()
        answer = await self.ask(self.answer_body(plan.decision.label, plan.view, plan.tools, plan.sampling))
        answer = await self.checked(plan, answer)
        if plan.mode is not None:
            answer = await self.acted(plan, answer)
        self.metrics.observe("answer", time.perf_counter() - start)
        return answer

    async def acted(self, plan: "Plan", first: Answer) -> Answer:
        """The harness runs its calls of the answer (tool proxies, or code in the session) and asks
        the specialist again, until it answers the user or calls the client's own functions."""
        usage = dict(first.usage)
        finish_reason = first.finish_reason

        async def ask(steps: list[Message], tools_on: bool) -> Message:
            nonlocal finish_reason
            view = [*plan.view, *steps]
            answer = await self.ask(self.answer_body(plan.decision.label, view, plan.tools if tools_on else None, plan.sampling))
            answer = await self.checked(plan, answer, view) if tools_on else answer
            for key, value in answer.usage.items():
                usage[key] = usage.get(key, 0) + value if isinstance(value, int) else value
            finish_reason = answer.finish_reason
            return answer.message

        message, step = await self.harness.run(ask, first.message, plan.mode, plan.session, plan.turn_id)
        plan.acted.extend(step.messages)
        plan.checks["actions"] = {"mode": plan.mode, "model_calls": step.model_calls, "executed": step.executed}
        if not message.get("tool_calls"):
            turns = len(plan.conversation.turns)
            forgotten = self.harness.finish_turn(plan.session, turns)
            if plan.mode == REPL and step.executed:
                await asyncio.to_thread(self.harness.keep_state, plan.session, turns + 1)
            if forgotten:
                await asyncio.to_thread(self.harness.forget, forgotten)
        return Answer(message, usage, "tool_calls" if message.get("tool_calls") else finish_reason)

    async def ask(self, body: dict) -> Answer:
        reply = await self.chat(body)
        choice = reply["choices"][0]
        message = {k: v for k, v in choice["message"].items() if v is not None}
        return Answer(message, reply.get("usage", {}), choice.get("finish_reason") or "stop")

    async def checked(self, plan: "Plan", answer: Answer, view: list[Message] | None = None) -> Answer:
        """``answer`` once the harness allows its tool calls and its surface validates (``view``:
        what the answer was asked with, when the harness's steps came after ``plan.view``)."""
        return await self.checked_surface(plan, await self.checked_calls(plan, answer, view), view)

    async def checked_surface(self, plan: "Plan", answer: Answer, view: list[Message] | None = None) -> Answer:
        """An answer that looks like A2UI messages, once valid (a code fence removed); else its
        problems go back to the specialist (``[ui] repairs`` times), and then it becomes plain
        text with a notice."""
        view, prior = view or plan.view, None
        for attempt in range(self.hcp.ui.repairs + 1):
            text = answer.message.get("content") or ""
            if answer.message.get("tool_calls") or not SURFACE_START.match(text) or not A2UI_KEYS.search(text):
                return answer  # not a surface (JSON of another kind passes as it is)
            prior = conversation_surfaces(plan.turns).messages if prior is None else prior
            result = check_answer(text, prior)
            plan.checks["surface"] = {"outcome": "valid" if result.valid else "fell_back", "repairs": attempt, "slip_fixed": bool(result.repairs)}
            if not result.valid:
                plan.checks["surface"]["problem"] = result.problems[0].as_dict()
            if result.valid:
                if result.repairs:
                    log.info("surface slip fixed (%s): %s", plan.decision.label, "; ".join(result.repairs))
                    self.metrics.surface("slip_repaired")
                    answer = replace(answer, message={**answer.message, "content": "\n".join(json.dumps(m, ensure_ascii=False) for m in result.messages)})
                self.metrics.surface("valid")
                return answer
            if attempt == self.hcp.ui.repairs:
                break
            self.metrics.surface("sent_back")
            view = [*view, answer.message, {"role": "user", "content": repair_request(result.problems)}]
            answer = await self.ask(self.answer_body(plan.decision.label, view, None, plan.sampling))
        log.warning("surface never validated (%s): %s", plan.decision.label, result.problems[0])
        self.metrics.surface("fell_back")
        return replace(answer, message={"role": "assistant", "content": surface_fallback(text, result.problems[0])}, finish_reason="stop")

    async def checked_calls(self, plan: "Plan", answer: Answer, view: list[Message] | None = None) -> Answer:
        """``answer`` if the harness allows its tool calls; else the calls go back to the specialist as
        tool errors (``[tools] max_repairs`` times), and then it answers with tools off."""
        view = view or plan.view
        own = self.harness.names(plan.mode) if self.harness is not None else set()
        for attempt in range(self.hcp.tools.max_repairs + 1):
            refusals = refused_calls(answer.message, plan.tools, self.hcp.tools.allowlist, own)
            if not refusals:
                return answer
            for reason in refusals.values():
                self.metrics.refuse(reason.split(":")[0])
            view = [*view, answer.message, *(tool_error(call, refusals) for call in answer.message["tool_calls"])]
            last = attempt == self.hcp.tools.max_repairs
            body = self.answer_body(plan.decision.label, view, plan.tools, plan.sampling)
            answer = await self.ask({**body, "tool_choice": "none"} if last else body)
        return replace(answer, message={k: v for k, v in answer.message.items() if k != "tool_calls"}, finish_reason="stop") if answer.message.get("tool_calls") else answer

    async def summarise(self, turn: Turn, system: tuple[Message, ...], turns: tuple[Turn, ...]) -> str:
        start = time.perf_counter()
        try:
            ask = [turn.user, *turn.replies, {"role": "user", "content": self.hcp.prompts.summary}]
            view = await self.fitted(self.system(system, turn.label), turns, turn.label, ask, None, self.hcp.generation.summary_max_tokens)
            body = {"model": self.model_for(turn.label), "messages": view, "max_tokens": self.hcp.generation.summary_max_tokens, "temperature": 0}
            reply = await self.chat(body)
            self.metrics.observe("summary", time.perf_counter() - start)
            return (reply["choices"][0]["message"].get("content") or "").strip()
        except Exception:  # a missing summary must never break later turns: fall back to the answer's start
            return stand_in_summary(turn.replies[-1])

    async def facts_said(self, turn: Turn) -> list[tuple[str, str]]:
        """What the user said about themselves in ``turn``, as (key, value): their ``my X is Y``
        statements, then the HCP's extraction hop (once the turn's summary is written, so the
        two background hops never compete for the engine)."""
        said = text_of(turn.user)
        facts = stated_facts(said)
        memory = self.hcp.memory
        if not memory.extract or not said.strip():
            return facts
        if turn.writing is not None:
            await asyncio.gather(turn.writing, return_exceptions=True)
        start = time.perf_counter()
        body = {"model": self.model_for(memory.extract_with), "max_tokens": memory.extract_max_tokens, "temperature": 0,
                "messages": [{"role": "system", "content": memory.extract}, {"role": "user", "content": said}]}
        try:
            reply = (await self.chat(body))["choices"][0]["message"].get("content") or ""
        except Exception as e:  # a lost extraction (engine error, odd reply) loses its facts, never the stated ones
            log.warning("memory extraction failed: %s", e)
            return facts
        self.metrics.observe("memory_extract", time.perf_counter() - start)
        known = {key for key, _ in facts}
        return [*facts, *((k, v) for k, v in extracted_facts(reply, said) if k not in known)]

    async def aclose(self) -> None:
        """Cancel summaries still being written (at shutdown)."""
        for task in self.summaries.values():
            task.cancel()
        await asyncio.gather(*self.summaries.values(), return_exceptions=True)

    async def chat(self, body: dict) -> dict:
        try:
            response = await self.engine.post("/chat/completions", json=body)
        except httpx.HTTPError as e:
            raise EngineError(f"engine unreachable: {type(e).__name__} {e}".rstrip(), 503) from e
        if response.is_error:
            raise EngineError.of_response(response.status_code, response.text)
        return response.json()


def meaning_search(router: Router) -> HiddenStateSimilarity | None:
    """Fact ranking by meaning on the router's own hidden states: a classifier router's only."""
    features = getattr(router, "features", None)
    return HiddenStateSimilarity(features) if features is not None else None


def may_be_surface(text: str) -> bool:
    """Whether an answer streamed so far may turn out to be A2UI messages (it is then held back)."""
    start = text.lstrip()[:8]
    return bool(start) and (SURFACE_START.match(start) is not None or "```json".startswith(start) or start.startswith("```json"))


def repair_request(problems: list[Problem]) -> str:
    """What goes back to the specialist for an invalid surface: each problem as A2UI reports it."""
    listed = "\n".join(json.dumps(p.as_dict(), ensure_ascii=False) for p in problems)
    return f"That surface is not valid A2UI:\n{listed}\nAnswer again with the corrected messages only, one JSON object per line."


def surface_fallback(text: str, problem: Problem) -> str:
    """A surface that never validated, as plain text: a notice, then the words it meant to show."""
    words = list(dict.fromkeys(re.findall(r'"(?:text|label)"\s*:\s*"([^"]{1,200})"', text)))
    notice = f"(This answer was meant to show an interactive view, but it was not valid and is shown as text: {problem.message})"
    return "\n".join([notice, *(f"- {w}" for w in words)])


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


def fold(answer: Answer, chunk: dict) -> Answer:
    """``answer`` with one streamed chunk merged in (text, tool calls, finish reason, usage)."""
    finish = answer.finish_reason
    for choice in chunk.get("choices") or []:
        merge_delta(answer.message, choice.get("delta") or {})
        finish = choice.get("finish_reason") or finish
    return Answer(answer.message, chunk.get("usage") or answer.usage, finish)


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


def stand_in_summary(message: Message) -> str:
    """What other views see of a turn with no written summary: the start of its answer."""
    return text_of(message)[:400]


def tool_name(tool: dict) -> str | None:
    return (tool.get("function") or {}).get("name")


def refused_calls(message: Message, tools: list[dict] | None, allowlist: list[str], own: set[str] = frozenset()) -> dict[str, str]:
    """Call id → why the harness refuses it: a function not offered, not allowed, arguments that
    are not a JSON object, or a message that mixes the harness's ``own`` functions with the client's."""
    offered = {tool_name(t) for t in tools or []}
    calls = message.get("tool_calls") or []
    names = {call.get("function", {}).get("name") for call in calls}
    mixed = bool(names & own) and bool(names - own)
    refusals = {}
    for call in calls:
        name = call.get("function", {}).get("name")
        if mixed:
            refusals[call["id"]] = "not run: call the harness's functions and the client's in separate messages"
        elif allowlist and name not in allowlist and name not in own:
            refusals[call["id"]] = f"not allowed: the harness does not allow calling {name!r}"
        elif name not in offered:
            refusals[call["id"]] = f"not offered: {name!r} is not one of the offered functions ({', '.join(sorted(filter(None, offered))) or 'none'})"
        else:
            try:
                arguments = json.loads(call["function"].get("arguments") or "{}")
            except json.JSONDecodeError:
                arguments = None
            if not isinstance(arguments, dict):
                refusals[call["id"]] = "bad arguments: the arguments must be a JSON object"
    return refusals


def tool_error(call: dict, refusals: dict[str, str]) -> Message:
    """The harness's answer to one call of a refused message (none of its calls ran)."""
    reason = refusals.get(call["id"], "not run: another call in this message was refused")
    return {"role": "tool", "tool_call_id": call["id"], "content": json.dumps({"error": reason})}


def check_tool_results(pending: Turn, current: list[Message]) -> None:
    """The results must answer exactly the pending calls, by id."""
    called = {call["id"] for call in pending.replies[-1].get("tool_calls", [])}
    answered = [m.get("tool_call_id") for m in current if m.get("role") == "tool"]
    if len(answered) != len(current) or set(answered) != called:
        raise ValueError(f"expected tool results for calls {sorted(called)}, got {answered}")
