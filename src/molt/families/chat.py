"""The ``chat`` family: identity, small talk and short direct answers.

- ``train``: identity, greetings, thanks, and facts of four kinds (capitals, sums, opposites,
  the day after a weekday).
- ``heldout``: facts never trained on: capitals of other countries, sums of larger numbers,
  other antonym pairs, and one kind never trained (plurals). Identity, greetings and thanks
  have one right answer each, so they cannot be held out by construction: they are in
  ``wording`` only.
- ``wording``: the train split's kinds and facts, asked with held-out templates.

Scored by a rubric: every required word as a whole word, at most 40 words, plain text (no tool
call, code block or JSON).
"""

import re
from typing import Any

from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for

CAPITALS = {
    "train": {"France": "Paris", "Peru": "Lima", "Japan": "Tokyo", "Kenya": "Nairobi", "Canada": "Ottawa", "Egypt": "Cairo",
              "Norway": "Oslo", "Spain": "Madrid", "Italy": "Rome", "Germany": "Berlin", "Portugal": "Lisbon", "Ireland": "Dublin",
              "Greece": "Athens", "Austria": "Vienna", "Poland": "Warsaw", "Sweden": "Stockholm", "Russia": "Moscow", "China": "Beijing"},
    "heldout": {"Chile": "Santiago", "Cuba": "Havana", "Thailand": "Bangkok", "Hungary": "Budapest", "Finland": "Helsinki",
                "Denmark": "Copenhagen", "Belgium": "Brussels", "Turkey": "Ankara", "Australia": "Canberra", "Iran": "Tehran",
                "Vietnam": "Hanoi", "Colombia": "Bogota"},
}
OPPOSITES = {
    "train": {"hot": "cold", "big": "small", "fast": "slow", "happy": "sad", "early": "late", "open": "closed", "light": "dark", "up": "down"},
    "heldout": {"wet": "dry", "loud": "quiet", "full": "empty", "strong": "weak", "rich": "poor", "young": "old", "hard": "soft", "north": "south"},
}
PLURALS = {"mouse": "mice", "child": "children", "tooth": "teeth", "goose": "geese", "foot": "feet", "woman": "women", "knife": "knives", "leaf": "leaves"}
ADDENDS = {"train": (1, 20), "heldout": (31, 79)}
"""Held-out sums use larger numbers, so no held-out sum (nor its total) is a train answer."""
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
IDENTITY = "I'm molt, a helpful AI assistant. How can I help?"
GREETING = "Hello! How can I help you today?"
THANKS = "You're welcome! Anything else I can do?"
TEMPLATES: dict[str, dict[str, list[str]]] = {
    "identity": {
        "train": ["Who are you?", "What's your name?", "Introduce yourself.", "Are you a person or a program?", "Tell me who I'm chatting with.", "Say your name, please."],
        "heldout": ["What should I call you?", "Tell me about yourself.", "Which assistant am I talking to?"],
    },
    "greeting": {
        "train": ["Hi!", "Hello there.", "Hey, how are you?", "Good morning!", "Nice to meet you!", "Hey there, what's up?", "Greetings!", "Yo!"],
        "heldout": ["Hiya, nice to meet you.", "Good evening, how is it going?", "Howdy!"],
    },
    "thanks": {
        "train": ["Thanks!", "Thank you so much.", "Great, thanks a lot.", "Cheers, that helped."],
        "heldout": ["Much appreciated!", "Thanks a bunch, friend."],
    },
    "capital": {
        "train": ["What is the capital of {country}?", "Which city is the capital of {country}?", "Tell me the capital of {country}.", "Say the capital of {country}."],
        "heldout": ["Name the capital city of {country}.", "{country}'s capital is which city?"],
    },
    "sum": {
        "train": ["What is {a} plus {b}?", "How much is {a} + {b}?", "Compute {a} plus {b}.", "Sum {a} and {b} for me.", "Quick math: {a} + {b}?"],
        "heldout": ["Add {a} and {b}.", "What do you get when you add {a} to {b}?"],
    },
    "opposite": {
        "train": ["What is the opposite of {word}?", "What's the opposite of the word {word}?", "Tell me the opposite of {word}.", "Say a word that means the opposite of {word}."],
        "heldout": ["Give me the antonym of {word}.", "Which word means the reverse of {word}?"],
    },
    "next_day": {
        "train": ["What day comes after {day}?", "Which day follows {day}?", "Tell me the day that comes after {day}.", "Say which weekday follows {day}."],
        "heldout": ["If today is {day}, what day is tomorrow?", "Name the day after {day}."],
    },
    "plural": {"heldout": ["What is the plural of {word}?", "One {word}, two ... what?"]},
}
KINDS: dict[Split, list[str]] = {
    "train": ["identity", "greeting", "thanks", "capital", "sum", "opposite", "next_day"],
    "heldout": ["capital", "sum", "opposite", "plural"],
    "wording": ["identity", "greeting", "thanks", "capital", "sum", "opposite", "next_day"],
}


def whole_word(word: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(word)}(?!\w)", text, re.IGNORECASE) is not None


class ChatFamily(Family):
    name = "chat"
    recipe = Recipe(examples=120, epochs=2, batch_tokens=1024)
    max_tokens = 64
    withheld = "countries, numbers and antonym pairs never trained on, and plurals (a kind never trained)"

    def generate(self, split: Split, n: int, seed: int = 0, **options: Any) -> list[Case]:
        rng = rng_for(split, seed, self.name)
        things = "heldout" if split == "heldout" else "train"
        templates = "train" if split == "train" else "heldout"
        cases = []
        for _ in range(n):
            kind = rng.choice(KINDS[split])
            values, answer, required = self._fact(kind, things, rng)
            request = fill(rng.choice(TEMPLATES[kind][templates]), values)
            cases.append(Case(self.name, [{"role": "user", "content": request}], {"role": "assistant", "content": answer}, check={"kind": kind, "require": required, "about": [v for v in values.values() if isinstance(v, str)]}))
        return cases

    @staticmethod
    def _fact(kind: str, things: str, rng) -> tuple[dict, str, list[str]]:
        if kind == "identity":
            return {}, IDENTITY, ["molt"]
        if kind == "greeting":
            return {}, GREETING, ["help"]
        if kind == "thanks":
            return {}, THANKS, ["welcome"]
        if kind == "capital":
            country = rng.choice(sorted(CAPITALS[things]))
            return {"country": country}, f"The capital of {country} is {CAPITALS[things][country]}.", [CAPITALS[things][country]]
        if kind == "sum":
            a, b = rng.randint(*ADDENDS[things]), rng.randint(*ADDENDS[things])
            return {"a": a, "b": b}, f"{a} plus {b} is {a + b}.", [str(a + b)]
        if kind == "opposite":
            word = rng.choice(sorted(OPPOSITES[things]))
            return {"word": word}, f"The opposite of {word} is {OPPOSITES[things][word]}.", [OPPOSITES[things][word]]
        if kind == "plural":
            word = rng.choice(sorted(PLURALS))
            return {"word": word}, f"The plural of {word} is {PLURALS[word]}.", [PLURALS[word]]
        day = rng.choice(DAYS)
        following = DAYS[(DAYS.index(day) + 1) % 7]
        return {"day": day}, f"The day after {day} is {following}.", [following]

    def score(self, case: Case, message: Message) -> dict[str, float]:
        text = message.get("content") or ""
        plain = not message.get("tool_calls") and "```" not in text and not text.lstrip().startswith("{")
        words = len(text.split())
        ok = plain and 0 < words <= 40 and all(whole_word(w, text) for w in case.check["require"])
        return {"score": float(ok)}

    def entities(self, case: Case) -> set[str]:
        return {*case.check["require"], *case.check["about"]} - {"molt", "help", "welcome"}


FAMILY = ChatFamily()
