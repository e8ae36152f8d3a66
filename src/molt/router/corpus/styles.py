"""Registers of the outside-style corpus: how people type the same request.

A style rewrites the sentence that asks (never an attached code block or traceback, which a
user pastes as is). Train and held-out have different styles with their own wording: plain,
polite, chatty, typo'd, a story before the ask, an email, a few words in capitals for
training; terse, a paragraph of context, formal, texting, all-lowercase and shouting held out.
Both splits wrap requests in words that do not change who should answer (a story, an email's
greeting), so the router learns to look past them, but never in the same words. Text in another
language gets only the language-neutral styles (plain and typo'd for training, lowercase and
shouting held out).
"""

import random
import re
from collections.abc import Callable

Style = Callable[[str, random.Random], str]


def lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) < 2 else text


def plain(text: str, rng: random.Random) -> str:
    return text


def polite(text: str, rng: random.Random) -> str:
    if text.rstrip().endswith("?"):
        return rng.choice(("Sorry to bother you, but ", "Quick question: ", "If you don't mind, ")) + lower_first(text)
    return rng.choice(("Could you please ", "Can you ", "Please ")) + lower_first(text.rstrip(".!")) + rng.choice(("?", ", thank you.", "."))


def chatty(text: str, rng: random.Random) -> str:
    return rng.choice(("hey!! ", "hiya, ", "ok so ", "Hi! ")) + text + rng.choice((" thanks!!", " :)", " ty", " appreciate it"))


def typo(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(words))
        word = words[i]
        if len(word) >= 4 and word.isalpha():
            j = rng.randrange(1, len(word) - 1)
            edit = rng.choice(("swap", "drop", "double"))
            if edit == "swap":
                word = word[:j] + word[j + 1] + word[j] + word[j + 2 :]
            elif edit == "drop":
                word = word[:j] + word[j + 1 :]
            else:
                word = word[:j] + word[j] + word[j:]
            words[i] = word
    out = " ".join(words)
    return out.lower() if rng.random() < 0.5 else out


TERSE_DROP = re.compile(r"\b(please|could you|can you|would you|i need|i want|i'd like|for me|me|my|the|a|an|just|right away|again)\b\s*", re.IGNORECASE)


def terse(text: str, rng: random.Random) -> str:
    out = TERSE_DROP.sub("", text).strip(" .!,")
    return (out or text).lower()


CONTEXT = (
    "I've been going back and forth on this all morning and finally decided to ask.",
    "Quick context: I'm on my phone between meetings, so sorry if this is messy.",
    "So my week has been chaotic, work is busy and the kids are off school.",
    "A friend told me you could help with this kind of thing.",
    "Long story short, my usual way of doing this stopped working yesterday.",
)
TAILS = ("Thanks in advance, you're a lifesaver.", "No rush, but today would be great.", "Let me know if you need anything else from me.", "")


def paragraph(text: str, rng: random.Random) -> str:
    lead = " ".join(rng.sample(CONTEXT, rng.randint(1, 2)))
    return f"{lead} Anyway, {lower_first(text)} {rng.choice(TAILS)}".strip()


def formal(text: str, rng: random.Random) -> str:
    opening = rng.choice(("Good afternoon.", "Dear assistant,", "Hello, I hope you are well."))
    closing = rng.choice(("Kind regards, M. Duarte", "Many thanks for your assistance.", "With best regards."))
    return f"{opening} I would be grateful for your help with the following: {text} {closing}"


TEXTING = {r"\byou\b": "u", r"\byour\b": "ur", r"\bplease\b": "pls", r"\bthanks\b": "thx", r"\bare\b": "r", r"\btomorrow\b": "tmrw", r"\bbecause\b": "cuz", r"\bfor\b": "4"}


def texting(text: str, rng: random.Random) -> str:
    out = text.lower()
    for pattern, short in TEXTING.items():
        out = re.sub(pattern, short, out)
    return out.rstrip(".") + rng.choice(("", " pls", " asap", " thx"))


STORY = (
    "My sister is visiting this weekend and I'm trying to get organised.",
    "Work has been hectic and I keep putting this off.",
    "I'm sitting at the airport with an hour to kill.",
    "This has been on my to-do list since Monday.",
    "We just moved and everything is still in boxes.",
)


def story(text: str, rng: random.Random) -> str:
    return f"{rng.choice(STORY)} {rng.choice(('So,', 'Here goes:', 'Question:', ''))} {text}".replace("  ", " ")


def email(text: str, rng: random.Random) -> str:
    greeting = rng.choice(("Hi there,", "Hello,", "Hey team,"))
    sign_off = rng.choice(("Best, Sam", "Cheers, Priya", "Thanks, Jordan"))
    return f"{greeting}\n\n{text}\n\n{sign_off}"


def emphatic(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    for i in rng.sample(range(len(words)), min(len(words), rng.randint(1, 2))):
        words[i] = words[i].upper()
    return " ".join(words).rstrip(".") + rng.choice(("!!!", "!", " !!"))


def lowercase(text: str, rng: random.Random) -> str:
    return text.lower().rstrip(".!?")


def shouting(text: str, rng: random.Random) -> str:
    return text.upper().rstrip(".") + rng.choice(("!!", "!!!", ""))


STYLES: dict[str, dict[str, Style]] = {
    "train": {"plain": plain, "polite": polite, "chatty": chatty, "typo": typo, "story": story, "email": email, "emphatic": emphatic},
    "heldout": {"terse": terse, "paragraph": paragraph, "formal": formal, "texting": texting, "lowercase": lowercase, "shouting": shouting},
}
WRAPPERS = frozenset({"story", "email", "paragraph", "formal"})
"""Styles that wrap the text in sentences of their own."""
NEUTRAL = {"train": ("plain", "typo"), "heldout": ("lowercase", "shouting")}
"""Styles that suit text in any language."""
