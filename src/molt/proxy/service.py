"""What the proxy does per request, free of HTTP: find the conversation, admit the turn, run it
through the turn loop, store the result once the answer is delivered, and shape the answer.

Errors come out as ``TurnError`` (status, message, OpenAI error type, param), which the routes
turn into error JSON before a stream starts, or into an SSE error event after.
"""

import asyncio
import copy
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from molt.harness.memory import Fact, MemoryInputError
from molt.hcp import HCP
from molt.http_api import error_body
from molt.proxy.limits import Admission, Limits, Overloaded
from molt.proxy.loop import Answer, Conversation, EngineError, Plan, TurnLoop, TurnResult, fold, meaning_search
from molt.proxy.protocol import SYSTEM_MODEL, ChatRequest, FeedbackRequest, ResponsesRequest, attribution, chunk_base, completion, split
from molt.proxy.responses_api import ResponseEvents, chat_tools, input_messages, output_items, usage_of
from molt.proxy.store import adopt, fingerprint
from molt.proxy.views import Turn
from molt.router import RouteDecision, make_router

if TYPE_CHECKING:
    from molt.experience.conversations import DurableConversations
    from molt.experience.log import ProxyState


ONCE_KEPT = 1000
"""Idempotency keys remembered (the oldest are forgotten first)."""

log = logging.getLogger("molt.proxy")

class TurnError(Exception):
    def __init__(self, status: int, message: str, type_: str, param: str | None = None, retry_after: int | None = None):
        super().__init__(message)
        self.status, self.type, self.param, self.retry_after = status, type_, param, retry_after

    @classmethod
    def of(cls, e: Exception, param: str) -> "TurnError":
        """A turn that did not happen: 429 when full, the engine's status when it failed, else 400 naming ``param``."""
        if isinstance(e, Overloaded):
            return cls(429, str(e), "RateLimitError", retry_after=1)
        if isinstance(e, EngineError):
            return cls(e.status, str(e), "EngineError" if e.status >= 500 else "BadRequestError")
        return cls(400, str(e), "BadRequestError", param)


@dataclass
class Streamed:
    """A turn whose answer streams: the plan (who answers and the turn id, for the headers), the
    SSE lines, and the admission slot, which the response holds until the last line is sent."""

    plan: Plan
    lines: AsyncIterator[str]
    slot: AsyncExitStack


class ProxyService:
    def __init__(self, hcp: HCP, loop: TurnLoop, state: "ProxyState", limits: Limits = Limits()):
        self.hcp, self.loop, self.state = hcp, loop, state
        self.admission = Admission(limits)
        self.store = state.conversations
        """Chat-completions conversations, by the fingerprint of the history the client will resend."""
        self.snapshots = state.snapshots
        """Responses API conversations, by response id."""
        self.labels = [s.label for s in hcp.specialists]
        self.training: dict[str, str] = {}
        """What a background bootstrap is still training (label → state), for /health."""
        self.once: OrderedDict[str, asyncio.Future] = OrderedDict()
        """Chat requests sent with an Idempotency-Key (by client and key): the first try's answer."""
        self.remembering: dict[str, set[asyncio.Task]] = {}
        """By user: turns whose facts are being extracted and written (in flight only)."""

    @property
    def surface_label(self) -> str | None:
        """The specialist an adopted history's surfaces belong to, if the HCP has it."""
        return self.hcp.ui.specialist if self.hcp.ui.specialist in self.labels else None

    def switch_to(self, hcp: HCP, keep_router: bool = False, pair: str | None = None) -> None:
        """Serve ``hcp`` (registry ``pair``, when it is one) from the next turn on: a specialist
        trained in the background, the trained router (built here unless ``keep_router``), a
        promoted or rolled-back pair. A new loop takes the new turns; turns in flight finish with
        the loop that planned them, so each turn is answered by exactly one pair."""
        router = self.loop.router if keep_router else make_router(hcp, self.loop.renderer, self.loop.engine)
        loop = copy.copy(self.loop)  # engine client, renderer, harness, summaries and metrics stay shared
        loop.hcp, loop.router, loop.pair = hcp, router, pair if pair is not None else self.loop.pair
        if not keep_router:  # facts are ranked with the new router's states, not the old one's (nor kept alive by it)
            loop.similarity = meaning_search(router)
        self.loop, self.hcp = loop, hcp

    def health(self) -> dict:
        busy = {"training": dict(self.training)} if self.training else {}
        if self.remembering:
            busy["remembering"] = sum(map(len, self.remembering.values()))  # turns whose facts are still being written
        return {"status": "ok", **busy}

    def named(self, model: str) -> str | None:
        """The specialist a request names (None: route), or a 404 for an unknown model."""
        if model == SYSTEM_MODEL:
            return None
        if model not in self.labels:
            raise TurnError(404, f"model {model!r} does not exist; use {SYSTEM_MODEL!r} or a specialist: {', '.join(self.labels)}", "NotFoundError", "model")
        return model

    def models(self) -> dict:
        created = int(time.time())
        return {"object": "list", "data": [{"id": name, "object": "model", "created": created, "owned_by": "molt"} for name in [SYSTEM_MODEL, *self.labels]]}

    async def admitted(self, plan: Callable[[], Awaitable[Plan]], param: str, client: str) -> tuple[Plan, AsyncExitStack]:
        """The turn planned inside an admission slot of ``client``'s; the caller closes the slot once the answer is out."""
        slot = AsyncExitStack()
        try:
            await slot.enter_async_context(self.admission.turn(client))
            return await plan(), slot
        except BaseException as e:
            await slot.aclose()
            if isinstance(e, (Overloaded, ValueError, EngineError)):
                raise TurnError.of(e, param) from e
            raise

    async def answered(self, plan: Plan, slot: AsyncExitStack, param: str) -> Answer:
        async with slot:
            start = time.perf_counter()
            try:
                answer = await plan.loop.answer(plan)
            except (ValueError, EngineError) as e:
                raise TurnError.of(e, param) from e
            plan.timings["answer"] = time.perf_counter() - start
            return answer

    async def finished(self, plan: Plan, answer: Answer, store: "DurableConversations", key: Callable[[dict], str]) -> TurnResult:
        """Finish the turn: store the conversation under ``key(answer message)`` and log the turn.
        Both are queued for the database's writer, never awaited on the database."""
        result = plan.loop.finish(plan, answer)
        await store.put(key(result.message), result.conversation)
        timings = {**plan.timings, "turn": time.perf_counter() - plan.started}
        results = [m for m in plan.earlier if m.get("role") == "tool"]
        await self.state.log.record(plan.turn_id, plan.decision, {"messages": plan.view, "tools": plan.tools}, result.message, results, timings, plan.loop.pair)
        if plan.user_id is not None and plan.loop.hcp.memory.enabled and result.conversation.pending is None:
            said_at = datetime.now(timezone.utc)  # facts take effect in the order they were said, not in the order their tasks finish
            task = asyncio.create_task(self.remember(plan.loop, plan.user_id, result.conversation.turns[-1], said_at))
            pending = self.remembering.setdefault(plan.user_id, set())
            pending.add(task)
            task.add_done_callback(lambda done, user=plan.user_id: self.forget_task(user, done))
        return result

    async def remember(self, loop: TurnLoop, user_id: str, turn: Turn, said_at: datetime) -> None:
        """Write what the user said about themselves in ``turn`` (a background task), valid from
        ``said_at``: a later turn's fact wins even when an earlier turn's task finishes after it."""
        try:
            for key, value in await loop.facts_said(turn):
                try:
                    await asyncio.to_thread(self.state.memory.remember, user_id, key, value, valid_from=said_at, source_turn=turn.id)
                except MemoryInputError as e:  # a fact memory does not take is dropped, the rest are kept
                    log.warning("memory: %s", e)
        except Exception:  # nobody awaits this task: say what went wrong here
            log.exception("memory: the facts of turn %s were not written", turn.id)

    def forget_task(self, user: str, task: asyncio.Task) -> None:
        pending = self.remembering.get(user, set())
        pending.discard(task)
        if not pending:
            self.remembering.pop(user, None)

    async def written(self, user: str, timeout: float = 30.0) -> None:
        """Wait (at most ``timeout`` s) until the facts of ``user``'s finished turns are written,
        so a listing of their memory reads their own turns."""
        pending = set(self.remembering.get(user, ()))
        if pending:
            await asyncio.wait(pending, timeout=timeout)

    async def aclose(self) -> None:
        tasks = [task for pending in self.remembering.values() for task in pending]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.loop.aclose()

    # -- chat completions ------------------------------------------------------------------------
    async def chat(self, body: ChatRequest, client: str = "") -> tuple[dict, Plan]:
        label = self.named(body.model)
        plan, slot = await self.admitted(lambda: self.chat_plan(body, label), "messages", client)
        answer = await self.answered(plan, slot, "messages")
        await self.finished(plan, answer, self.store, lambda message: fingerprint(body.messages + [message]))
        return completion(body.model, answer.message, answer.usage, answer.finish_reason, plan.decision, plan.checks), plan

    async def chat_once(self, body: ChatRequest, client: str, key: str) -> tuple[dict, Plan]:
        """A request with an ``Idempotency-Key`` runs once (a UI action retried by a flaky network
        must not act twice): a retry gets the first try's answer, waiting for it while it runs,
        even if the first client went away. A try that failed may be tried again."""
        scoped = f"{client}:{key}"
        if scoped not in self.once:
            self.once[scoped] = asyncio.ensure_future(self.chat(body, client))
            while len(self.once) > ONCE_KEPT:
                self.once.popitem(last=False)
        first = self.once[scoped]
        try:
            return await asyncio.shield(first)
        except TurnError:
            if first.done() and self.once.get(scoped) is first:
                del self.once[scoped]
            raise

    async def chat_stream(self, body: ChatRequest, client: str = "") -> Streamed:
        label = self.named(body.model)
        plan, slot = await self.admitted(lambda: self.chat_plan(body, label), "messages", client)
        return Streamed(plan, self.chat_lines(plan, body), slot)

    async def chat_plan(self, body: ChatRequest, label: str | None) -> Plan:
        loop = self.loop  # one pair plans the whole turn
        system, history, current = split(body.messages)
        conversation = await self.store.get(fingerprint(system + history))
        if conversation is None:
            conversation = adopt(system, history, loop.hcp.router.default_label, self.surface_label) if history else Conversation(tuple(system))
            if conversation.pending is not None:
                conversation = await loop.route_pending(conversation, label, body.tools)
        return await loop.plan(conversation, current, label, body.tools, body.sampling, await self.remembered(body.user), body.user)

    async def chat_lines(self, plan: Plan, body: ChatRequest) -> AsyncIterator[str]:
        """The engine's chunks under the proxy's id and model; the turn is stored only after the
        last one, so a client that leaves mid-stream, or an engine that fails, leaves the
        conversation as it was (the failure arrives as an SSE error event)."""
        base = chunk_base(body.model, plan.decision)
        answer, start = Answer({"role": "assistant"}), time.perf_counter()
        try:
            async for chunk in plan.loop.answer_stream(plan):
                answer = fold(answer, chunk)
                yield sse({**base, "choices": chunk.get("choices", []), **({"usage": chunk["usage"]} if chunk.get("usage") else {})})
        except EngineError as e:
            yield sse(error_body(e.status, str(e), "EngineError"))
            return
        plan.timings["answer"] = time.perf_counter() - start
        await self.finished(plan, complete(answer), self.store, lambda message: fingerprint(body.messages + [message]))
        yield "data: [DONE]\n\n"

    async def feedback(self, body: FeedbackRequest) -> dict:
        from molt.experience.log import UnknownTurn

        try:
            await self.state.log.feedback(body.turn_id, body.rating, body.comment)
        except UnknownTurn:
            raise TurnError(404, f"no logged turn {body.turn_id!r} (the x-molt-turn-id header of a turn this proxy served, within the HCP's retention)", "NotFoundError", "turn_id") from None
        return {"object": "feedback", "turn_id": body.turn_id, "rating": body.rating}

    # -- responses -------------------------------------------------------------------------------
    async def respond(self, body: ResponsesRequest, client: str = "") -> tuple[dict, Plan]:
        plan, slot = await self.admitted(lambda: self.respond_plan(body), "input", client)
        answer = await self.answered(plan, slot, "input")
        response = self.response_head(body, plan.decision)
        await self.finished(plan, answer, self.snapshots, lambda _: response["id"])
        return {**response, "status": "completed", "output": output_items(answer.message), "usage": usage_of(answer.usage)}, plan

    async def respond_stream(self, body: ResponsesRequest, client: str = "") -> Streamed:
        plan, slot = await self.admitted(lambda: self.respond_plan(body), "input", client)
        return Streamed(plan, self.respond_lines(plan, body), slot)

    async def respond_plan(self, body: ResponsesRequest) -> Plan:
        """Stateful turns: each stored response is an immutable snapshot of the conversation, so
        two requests continuing the same ``previous_response_id`` branch without seeing each other."""
        label = self.named(body.model)
        system = ({"role": "system", "content": body.instructions},) if body.instructions else ()
        conversation = await self.snapshots.get(body.previous_response_id) if body.previous_response_id else Conversation(system)
        if conversation is None:
            raise TurnError(404, f"no response {body.previous_response_id!r} (never made here, or past the HCP's retention)", "NotFoundError", "previous_response_id")
        return await self.loop.plan(conversation, input_messages(body.input), label, chat_tools(body.tools), body.sampling, await self.remembered(body.user), body.user)

    async def remembered(self, user: str | None) -> list[Fact]:
        """What memory holds about the request's user (none when it names none, or memory is off)."""
        if user is None or not self.loop.hcp.memory.enabled:
            return []
        return await asyncio.to_thread(self.state.memory.facts, user)

    def response_head(self, body: ResponsesRequest, decision: RouteDecision) -> dict:
        return {
            "id": f"resp_{uuid.uuid4().hex}", "object": "response", "created_at": int(time.time()), "model": body.model,
            "previous_response_id": body.previous_response_id, "molt": attribution(decision),
        }

    async def respond_lines(self, plan: Plan, body: ResponsesRequest) -> AsyncIterator[str]:
        """Responses stream events; the snapshot is stored once the answer is complete."""
        head = self.response_head(body, plan.decision)
        events = ResponseEvents(head)
        answer, start = Answer({"role": "assistant"}), time.perf_counter()
        for line in events.start():
            yield line
        try:
            async for chunk in plan.loop.answer_stream(plan):
                answer = fold(answer, chunk)
                for choice in chunk.get("choices") or []:
                    for line in events.delta(choice.get("delta") or {}):
                        yield line
        except EngineError as e:
            for line in events.failed(e.status, str(e)):
                yield line
            return
        plan.timings["answer"] = time.perf_counter() - start
        await self.finished(plan, complete(answer), self.snapshots, lambda _: head["id"])
        for line in events.finish(answer.usage):
            yield line


def complete(answer: Answer) -> Answer:
    """A streamed answer as a message: an answer that streamed nothing is an empty text."""
    if "content" not in answer.message and "tool_calls" not in answer.message:
        answer.message["content"] = ""
    return answer


def sse(data: dict) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False)}\n\n"
