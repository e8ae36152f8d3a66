"""The scripted user: deterministic, no model, and it only ever says what it was asked.

Each session opens with the scenario's message. After each assistant turn the user reads the
assistant's text: a question (a sentence ending in "?" or a "tell me"/"let me know") that names a
profile slot by one of its words is asking for that slot. The user then

- answers a withheld slot with its value, and nothing else;
- counts a question about a slot it already gave, or stated in an earlier session, as
  **redundant**, and repeats nothing ("I already told you…", "I told you that last time.");
- changes its mind on the scenario's cue turn, and passes on news of a world change;
- ends the session ("Thanks, that's all!") when the assistant reports done ("Nothing was booked"
  is no report) or the session's goal holds in the world (the user sees the work is done), and it
  asks for no slot ("Ordered! Anything else?" ends it too);
- otherwise nudges the assistant on, and leaves after ``MAX_USER_TURNS`` messages in a session:
  each session has its own, so a session that never ends leaves the next ones their turns.
"""

import random
import re
from dataclasses import dataclass

from molt.bench.living.phrases import mentions
from molt.bench.living.scenarios import Scenario
from molt.bench.living.task import Slot

MAX_USER_TURNS = 6
"""Per session, the opening included."""
DONE = re.compile(r"\b(done|all set|booked|scheduled|sent|paid|ordered|placed|moved|cancell?ed|added|confirmed|completed|taken care)\b", re.IGNORECASE)
NEGATED = re.compile(r"\b(not|never|nothing|none|unable|cannot|failed|no(?! problem| worries))\b|n't\b", re.IGNORECASE)
ASKING = re.compile(r"\b(tell me|let me know|please (provide|confirm|specify|share))\b", re.IGNORECASE)
NUDGES = ("Could you please take care of it?", "Can you just go ahead and do it?", "Please go ahead.")
GOODBYE = "Thanks, that's all!"


@dataclass(frozen=True)
class Ask:
    """The assistant asked for ``slot`` in its turn ``turn``."""

    turn: int
    session: int
    slot: str
    redundant: bool


@dataclass(frozen=True)
class Transcript:
    sessions: tuple[list[dict], ...]
    """Each session's messages, system message first, the user's last message last."""
    asks: tuple[Ask, ...]
    turns: int
    """Assistant turns (final replies) over all sessions."""


def questions(text: str) -> list[str]:
    sentences = re.split(r"(?<=[.!?])\s+|\n+", text or "")
    return [s for s in sentences if s.strip().endswith("?") or ASKING.search(s)]


def reports_done(text: str) -> bool:
    """A statement (neither a question nor negated) saying the work is done."""
    asked = set(questions(text))
    return any(DONE.search(s) and not NEGATED.search(s) for s in re.split(r"(?<=[.!?])\s+|\n+", text or "") if s not in asked)


def asked_slots(text: str, profile: dict[str, Slot]) -> list[str]:
    """The profile slots the assistant's text asks about, in profile order."""
    asked = questions(text)
    return [name for name, slot in profile.items() if any(mentions(q, w) for q in asked for w in slot.words)]


class UserSimulator:
    """Example::

        from molt.bench.living.scenarios import scenarios
        scenario = next(s for s in scenarios("test") if s.variant == "asymmetry")
        user = UserSimulator(scenario)
        opening = user.open(0)
        reply = user.reply("Sure. What time would you like?", turn=1)
        assert user.asks[0].slot == "time" and not user.ended
    """

    def __init__(self, scenario: Scenario, seed: int = 0):
        self.scenario = scenario
        self.rng = random.Random(f"{seed}/{scenario.id}")
        self.turns = 0
        """The user's messages in this session."""
        self.session = -1
        self.given: set[str] = set()
        self.asks: list[Ask] = []
        self.ended = False

    @property
    def redundant(self) -> int:
        return sum(a.redundant for a in self.asks)

    def open(self, session: int) -> str:
        """The opening of ``session``."""
        self.session, self.ended, self.turns = session, False, 1
        self.given = set(self.scenario.sessions[session].given)
        return self.scenario.sessions[session].opening

    def reply(self, text: str, turn: int, finished: bool = False) -> str:
        """The user's next message after the assistant's final ``text`` of its turn ``turn``;
        ``finished``: this session's goal holds in the world now."""
        self.turns += 1
        parts = self._answers(text, turn)
        cue, change = self.scenario.cue, self.scenario.change
        if cue and cue.turn == self.turns:
            parts.append(cue.text)
            self.given.add(cue.slot)
        if change and change.turn == self.turns:
            parts.append(change.notice)
        if not parts and (finished or reports_done(text)):
            self.ended = True
            return GOODBYE
        if self.turns >= MAX_USER_TURNS:
            self.ended = True
            return " ".join([*parts, "Sorry, I have to go now."])
        if not parts:
            parts.append("Yes, please go ahead." if questions(text) else self.rng.choice(NUDGES))
        return " ".join(parts)

    def _answers(self, text: str, turn: int) -> list[str]:
        session, parts = self.scenario.sessions[self.session], []
        for name in asked_slots(text, self.scenario.profile):
            slot = self.scenario.profile[name]
            if name in session.recalled:
                redundant, said = True, f"I told you my {slot.label} last time."
            elif name in self.given:
                redundant, said = True, f"I already told you the {slot.label}."
            elif name in session.withheld:
                redundant, said = False, f"The {slot.label} is {slot.spoken}."
            else:
                continue  # a slot of another session's task: not this conversation's business
            parts.append(said)
            self.asks.append(Ask(turn, self.session, name, redundant))
            self.given.add(name)
        return parts
