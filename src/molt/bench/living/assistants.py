"""Two reference assistants that pin the benchmark's scale: the oracle scores 1, idle scores 0.

``OracleAssistant`` reads the scenario's hidden plan but learns the user's values the fair way:
from what the user actually said (a slot's phrase in a user message), keeping them across
sessions as its own memory of the user. Each turn it asks for every slot the plan needs and it
does not know, or else makes the plan's calls one per round and reports done. Its switches make
it fail one noise kind at a time: ``reread=False`` acts on a corrupted result,
``follow_changes=False`` ignores a change of mind, ``stale=True`` uses the values read before a
world change, ``remember=False`` forgets the user between sessions.
"""

import json
from string import Formatter
from typing import Any

from molt.bench.living.phrases import mentions
from molt.bench.living.scenarios import Scenario
from molt.bench.living.task import Call, Lookup

DONE = "All done, I've taken care of it."


def idle_assistant(messages: list[dict], tools: list[dict], user: str, session: int) -> dict:
    """Says "ok" and does nothing."""
    return {"role": "assistant", "content": "ok"}


class OracleAssistant:
    """Example::

        from molt.bench.living.runner import run_scenario
        from molt.bench.living.scenarios import scenarios
        scenario = scenarios("train")[3]
        assert run_scenario(scenario, OracleAssistant(scenario)).score.process == 1.0
    """

    def __init__(self, scenario: Scenario, reread: bool = True, follow_changes: bool = True, stale: bool = False, remember: bool = True):
        self.scenario = scenario
        self.reread, self.follow_changes, self.stale, self.remember = reread, follow_changes, stale, remember
        self.session = 0
        self.known: dict = {}
        """What the user has said, by slot: this assistant's memory, kept across sessions."""
        self.queue: list[Call] | None = None
        self.last: Call | None = None
        self.done: set[int] = set()
        self.serial = 0

    def __call__(self, messages: list[dict], tools: list[dict], user: str, session: int) -> dict:
        last = messages[-1]
        if session != self.session and not self.remember:
            self.known = {}
        self.session = session
        if last["role"] == "user":
            self._learn(last["content"])
            self.queue = None
        if session in self.done:
            return {"role": "assistant", "content": DONE}
        if self.queue is None:
            plan = self.scenario.sessions[session].calls
            missing = [n for n in self._needed(plan) if n not in self.known]
            if missing:
                words = " and ".join(self.scenario.profile[n].words[0] for n in missing)
                return {"role": "assistant", "content": f"Happy to. Could you tell me: {words}?"}
            self.queue = list(plan)
        if last["role"] == "tool" and self.reread and _corrupted(json.loads(last["content"])):
            self.queue.insert(0, self.last)
        if not self.queue:
            self.done.add(session)
            return {"role": "assistant", "content": DONE}
        self.last = self.queue.pop(0)
        return self._call(self.last)

    def _learn(self, text: str) -> None:
        cue = self.scenario.cue
        if cue and not self.follow_changes:
            text = text.replace(cue.text, "")
        for name, slot in self.scenario.profile.items():
            for value, spoken in (*([slot.alt] if slot.alt else []), (slot.value, slot.spoken)):
                if mentions(text, spoken):
                    self.known[name] = value

    def _needed(self, plan: tuple[Call, ...]) -> list[str]:
        """The profile slots the plan's arguments name, directly or through a lookup."""
        names: list[str] = []
        for field in (f for call in plan for v in call.arguments.values() for f in _fields(v)):
            derived = self.scenario.derived.get(field)
            names += derived.slots if isinstance(derived, Lookup) else [field]
        return [n for n in dict.fromkeys(names) if n in self.scenario.profile]

    def _values(self) -> dict:
        values = dict(self.known)
        for name, derived in self.scenario.derived.items():
            if isinstance(derived, Lookup):
                key = tuple(self.known.get(s) for s in derived.slots)
                if key in derived.table:
                    values[name] = derived.table[key]
            else:
                values[name] = derived
        if self.stale and self.scenario.change:
            values.update(self.scenario.change.stale)
        return values

    def _call(self, call: Call) -> dict:
        values = self._values()
        arguments = {k: _render(v, values) for k, v in call.arguments.items()}
        self.serial += 1
        tool_call = {"id": f"call_{self.serial}", "type": "function", "function": {"name": call.name, "arguments": json.dumps(arguments)}}
        return {"role": "assistant", "content": None, "tool_calls": [tool_call]}


def _render(template: Any, values: dict) -> Any:
    """``"{x}"`` alone keeps the value's type (an amount stays a number); text is formatted."""
    if not isinstance(template, str):
        return template
    fields = _fields(template)
    if fields == [template[1:-1]]:
        return values[fields[0]]
    return template.format(**values)


def _fields(template: Any) -> list[str]:
    return [f for _, f, _, _ in Formatter().parse(template) if f] if isinstance(template, str) else []


def _corrupted(result: dict) -> bool:
    return "partial" in result or "temporarily unavailable" in result.get("error", "")
