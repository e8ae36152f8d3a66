"""Runs one scenario: the assistant, the world's tools and the scripted user, session by session.

An assistant is any synchronous callable
``assistant(messages, tools, user, session) -> dict`` returning an OpenAI-style assistant message
(``content`` and, optionally, ``tool_calls`` whose ``arguments`` are JSON strings). Each session
starts a fresh message list (a system message with the world's date, then the user's opening);
nothing of an earlier session is passed on, so facts can only carry over through whatever the
assistant keeps per ``user`` (``living-<scenario id>``).
"""

import json
from dataclasses import dataclass
from datetime import date
from typing import Callable

from molt.bench.living.scenarios import Scenario
from molt.bench.living.scoring import Score, expectation_met, score
from molt.bench.living.simulator import Transcript, UserSimulator
from molt.bench.living.world import Record, World, app_tools

MAX_TOOL_ROUNDS = 6
SYSTEM = ("You are a personal assistant. You manage the user's calendar, contacts, shopping, bank account and messages "
          "with the tools. Ask the user for anything you need and don't know. Today is {weekday}, {today}.")
Assistant = Callable[[list[dict], list[dict], str, int], dict]


@dataclass(frozen=True)
class Result:
    scenario: str
    score: Score
    transcript: Transcript
    calls: tuple[Record, ...]
    turns: int


class Episode:
    """One scenario, one assistant message at a time: the bench's runner and the RL environment
    (``molt.forge.living``) both drive it. ``messages`` and ``tools`` are what the assistant
    sees now; ``act`` takes its message: tool calls run against the world and their results join
    the session, a text goes to the user (who also sees whether the session's goal now holds in
    the world), whose reply (or the next session) comes next."""

    def __init__(self, scenario: Scenario, seed: int = 0):
        self.scenario, self.world, self.user = scenario, World(scenario.world, scenario.fault), UserSimulator(scenario, seed)
        self.sessions: list[list[dict]] = []
        self.session, self.turns, self.rounds, self.changed, self.done = -1, 0, 0, False, False
        self.messages: list[dict] = []
        self.tools: list[dict] = []
        self.next_session()

    def next_session(self) -> None:
        self.session += 1
        if self.session == len(self.scenario.sessions):
            self.done = True
            return
        opening = self.user.open(self.session)
        system = SYSTEM.format(weekday=f"{date.fromisoformat(self.world.today):%A}", today=self.world.today)
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": opening}]
        self.sessions.append(self.messages)
        self.tools = app_tools({call.name for call in self.scenario.sessions[self.session].calls})
        self.start_turn()

    def start_turn(self) -> None:
        self.turns, self.rounds = self.turns + 1, 0
        self.world.session, self.world.turn = self.session, self.turns

    def act(self, message: dict) -> None:
        """Up to ``MAX_TOOL_ROUNDS`` rounds of tool calls, then a text for the user."""
        message = _normalise(message)
        self.messages.append(message)
        calls = message.get("tool_calls", [])
        for call in calls:
            result = _execute(self.world, call) if self.rounds < MAX_TOOL_ROUNDS else {"error": "too many tool rounds in one turn; answer the user now"}
            self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
        if calls and self.rounds < MAX_TOOL_ROUNDS:
            self.rounds += 1
            return
        goal = self.scenario.sessions[self.session].goal
        reply = self.user.reply(message.get("content") or "", self.turns, bool(goal) and all(expectation_met(e, self.world) for e in goal))
        change = self.scenario.change
        if change and not self.changed and self.user.turns >= change.turn:
            self.world.apply(change.ops)
            self.changed = True
        self.messages.append({"role": "user", "content": reply})
        if self.user.ended:
            self.next_session()
        else:
            self.start_turn()

    def result(self) -> Result:
        transcript = Transcript(tuple(self.sessions), tuple(self.user.asks), self.turns)
        return Result(self.scenario.id, score(self.scenario, self.world, transcript), transcript, tuple(self.world.calls), self.turns)


def run_scenario(scenario: Scenario, assistant: Assistant, seed: int = 0) -> Result:
    """Example::

        from molt.bench.living.assistants import OracleAssistant
        from molt.bench.living.scenarios import scenarios
        scenario = scenarios("test")[0]
        assert run_scenario(scenario, OracleAssistant(scenario)).score.total == 1.0
    """
    episode = Episode(scenario, seed)
    while not episode.done:
        episode.act(assistant(list(episode.messages), episode.tools, scenario.user, episode.session))
    return episode.result()


def _execute(world: World, call: dict) -> dict:
    function = call.get("function", {})
    try:
        arguments = json.loads(function.get("arguments") or "{}")
    except json.JSONDecodeError as error:
        return {"error": f"arguments of {function.get('name')} are not valid JSON: {error}"}
    return world.call(function.get("name", ""), arguments)


def _normalise(message: dict) -> dict:
    """Keep what the next request needs; a missing call id gets one, since tool results cite it."""
    out = {"role": "assistant", "content": message.get("content")}
    calls = [{**c, "id": c.get("id") or f"call_{i}"} for i, c in enumerate(message.get("tool_calls") or [])]
    return {**out, "tool_calls": calls} if calls else out
