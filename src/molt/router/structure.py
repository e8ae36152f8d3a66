"""Structure features of a turn: what the request *is*, beyond what its words say.

Each feature is a named number computed from a ``RouteRequest`` without the model: whether
functions are offered and how well the request matches the best of them (word and character
overlap with its name, description and parameters), tool calls and results in the turn or the
recent history, code in the text or the history, a programming language named, a UI surface in
the history, whether the ask is a question, speaks of the user ("my order") or holds numbers,
and the text's size. The classifier weighs them next to the base's hidden states (``features.py``).

Design choices:

- **Named, in a fixed order.** A router file lists the names it was trained with, so a change
  here cannot silently shift the columns of an existing router.
- **Recent history only.** The last ``HISTORY_WINDOW`` messages before the turn are read, which
  bounds the cost of a long conversation; the route log keeps the same window.
- **Language-light matching.** Words are compared by a 4-letter stem and character trigrams of
  content words, so "rides" meets ``book_ride`` and "reservar" meets ``reserve_spot`` without a
  vocabulary; the embedding similarity (computed in ``features.py``) covers the rest.
"""

import math
import re
from collections import Counter
from collections.abc import Iterable

from molt.router.base import Message, RouteRequest, message_text

HISTORY_WINDOW = 8
"""Messages before the turn that the router reads (and the route log keeps)."""

STRUCTURE = (
    "tools_offered", "tool_count", "tool_words", "tool_word_share", "tool_trigrams", "tool_embedding",
    "turn_tool_calls", "turn_tool_results", "history", "history_tool_results", "history_code",
    "history_surface", "text_code", "text_language", "text_personal", "text_question", "text_digits", "text_chars", "text_lines",
)
"""The structure features, in column order (``tool_embedding`` is filled in by ``features.py``)."""

STOPWORDS = frozenset(
    "the and for you your with that this from have has are was were can could would should will "
    "please what when where which who how why about into onto than then them they their there here "
    "some any all not but just also very really like want need get give make let its it's i'm me "
    "my mine our again most much many one two of to in on at by or an a is be "
    "do does did so if as we us he she him her his hers it i".split()
)

WORD = re.compile(r"[^\W\d_]+")
CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])")
CODE_SIGNALS = [
    re.compile(p, re.MULTILINE)
    for p in (
        r"```", r"Traceback \(most recent call last\)", r"^\s*File \".*\", line \d+", r"\b\w+(Error|Exception)\b:",
        r"^(    |\t)\S", r"\b(def|class|return|import|lambda|elif|fn|func|const|let|var|function|public|void|struct|SELECT|FROM|WHERE)\b",
        r"[{};]\s*$", r"\w+\([^()\n]*\)", r"[=!<>]=|->|=>|\+=|&&|\|\|", r"`[^`\n]+`", r"\bpanic:|\bat \S+:\d+",
    )
]
PROGRAMMING_LANGUAGE = re.compile(
    r"(?<![\w+#])(python|javascript|typescript|java|golang|rust|kotlin|ruby|php|perl|scala|haskell|elixir|fortran|cobol|"
    r"c\+\+|c#|sql|bash|powershell|regex|numpy|pandas|django|flask|node\.?js)(?![\w+#])",
    re.IGNORECASE,
)
"""Programming languages and libraries by name (not "go", "c" or "r", which are plain words too)."""
PERSONAL = re.compile(
    r"(?<!\w)(i|i'm|i've|i'd|me|my|mine|our|us|mi|mis|mío|mon|ma|mes|moi|mein|meine|meinen|meinem|mich|mir|"
    r"meu|minha|meus|minhas|mio|mia|miei|mijn|mij)(?!\w)",
    re.IGNORECASE,
)
"""The user speaking of themselves (a few European languages): actions are mostly about "my"
order or "me"; questions about the world mostly are not."""
QUESTION = re.compile(
    r"^\W*(what|why|how|who|when|where|which|is|are|do|does|did|can|could|should|would|will|was|were|"
    r"qué|que|por qué|cuál|quién|cómo|pourquoi|quel|quelle|qui|comment|warum|wie|wer|wann|welche|"
    r"qual|quem|porque|como|quando|onde|perché|chi|waarom|hoe|wie)\b",
    re.IGNORECASE,
)
SENTENCE = re.compile(r"(?<=[.!?:])\s+")
SURFACE_KEYS = ("createSurface", "updateComponents", "updateDataModel")


def stems(text: str) -> set[str]:
    """Content words, lowercased, cut to 4 letters (a stem good enough to meet plurals and -ing)."""
    words = (w.lower() for w in WORD.findall(CAMEL.sub(" ", text)))
    return {w[:4] for w in words if len(w) >= 3 and w not in STOPWORDS}


def trigrams(text: str) -> Counter:
    words = [w.lower() for w in WORD.findall(CAMEL.sub(" ", text)) if w.lower() not in STOPWORDS]
    return Counter(g for w in words for g in (f" {w} "[i : i + 3] for i in range(len(w))))


def cosine(a: Counter, b: Counter) -> float:
    dot = sum(v * b[k] for k, v in a.items() if k in b)
    norm = math.sqrt(sum(v * v for v in a.values()) * sum(v * v for v in b.values()))
    return dot / norm if norm else 0.0


def tool_text(tool: dict) -> str:
    """What a tool offers, in words: its name, description, and each parameter's name,
    description and allowed values."""
    function = tool.get("function", tool)
    parts = [str(function.get("name", "")).replace("_", " "), str(function.get("description", ""))]
    properties = (function.get("parameters") or {}).get("properties") or {}
    for name, spec in properties.items():
        spec = spec if isinstance(spec, dict) else {}
        parts += [name.replace("_", " "), str(spec.get("description", "")), " ".join(map(str, spec.get("enum") or []))]
    return " ".join(p for p in parts if p)


def code_signals(text: str) -> int:
    return sum(bool(signal.search(text)) for signal in CODE_SIGNALS)


def has_surface(message: Message) -> bool:
    """A genui answer (``{"version": ..., "createSurface": ...}``), bare, fenced or inside prose."""
    text = message_text(message)
    return any(f'"{key}"' in text for key in SURFACE_KEYS)


def shared_stems(request: set[str], tool: set[str]) -> int:
    """Request stems that meet a tool stem, one being the start of the other ("pay", "paym")."""
    return sum(any(a.startswith(b) or b.startswith(a) for b in tool) for a in request)


def tool_match(text: str, tools: Iterable[dict]) -> tuple[float, float, float]:
    """(shared stems, share of the request's stems, trigram cosine) with the best-matching tool."""
    request_stems, request_grams = stems(text), trigrams(text)
    best = (0.0, 0.0, 0.0)
    for tool in tools:
        described = tool_text(tool)
        shared = shared_stems(request_stems, stems(described))
        match = (math.log1p(shared), shared / max(1, len(request_stems)), cosine(request_grams, trigrams(described)))
        best = tuple(max(a, b) for a, b in zip(best, match))
    return best


def structure_features(request: RouteRequest) -> dict[str, float]:
    """Every feature of ``STRUCTURE`` but ``tool_embedding`` (0 here)."""
    history = request.history[-HISTORY_WINDOW:]
    earlier = [m for m in history if m.get("role") != "tool"]
    words, word_share, grams = tool_match(request.text, request.tools)
    ask = request.text.strip().split("\n")[0]  # what follows the first line is mostly pasted: code, a traceback
    return {
        "tools_offered": float(bool(request.tools)),
        "tool_count": math.log1p(len(request.tools)),
        "tool_words": words,
        "tool_word_share": word_share,
        "tool_trigrams": grams,
        "tool_embedding": 0.0,
        "turn_tool_calls": float(any(m.get("tool_calls") for m in request.replies)),
        "turn_tool_results": float(any(m.get("role") == "tool" for m in request.replies)),
        "history": float(bool(history)),
        "history_tool_results": float(any(m.get("role") == "tool" or m.get("tool_calls") for m in history)),
        "history_code": math.log1p(max((code_signals(message_text(m)) for m in earlier), default=0)),
        "history_surface": float(any(has_surface(m) for m in earlier if m.get("role") == "assistant")),
        "text_code": math.log1p(code_signals(request.text)),
        "text_language": float(bool(PROGRAMMING_LANGUAGE.search(request.text))),
        "text_personal": float(bool(PERSONAL.search(ask))),
        "text_question": float("?" in ask or any(QUESTION.search(sentence) for sentence in SENTENCE.split(ask))),
        "text_digits": float(any(c.isdigit() for c in ask)),
        "text_chars": math.log1p(len(request.text)),
        "text_lines": math.log1p(request.text.count("\n")),
    }


def structure_vector(request: RouteRequest, names: tuple[str, ...] | list[str]) -> list[float]:
    values = structure_features(request)
    return [values[name] for name in names]
