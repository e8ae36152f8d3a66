"""The ``agent`` family: requests over many function schemas, answered with the right tool calls.

Every case offers the OpenAI ``tools`` the way a client does: the function the request needs
among one to three others, in random order. Four shapes:

- **call:** one request → one call with exactly the arguments the request states (strings
  verbatim, numbers as numbers, enums, lists, nested objects, optional parameters only when asked);
- **parallel:** one request → two calls of the same function;
- **no call:** the needed function is not offered → a plain answer saying it can't be done here;
- **result:** the call was made and its result came back → a plain answer that uses the result.

Splits: ``train`` offers and calls the 16 train functions with the train vocabulary;
``heldout`` only the 12 held-out functions (other kinds of API) with the held-out vocabulary;
``wording`` the train functions and vocabulary with held-out templates
(``molt.families.agent_functions``).
"""

import json
import re
from typing import Any

from molt.families.agent_functions import HELDOUT_FUNCTIONS, NUMBERS, PARALLEL, TRAIN_FUNCTIONS, TWINS, VOCAB, Function
from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for, slots

BY_NAME = {f.name: f for f in TRAIN_FUNCTIONS + HELDOUT_FUNCTIONS}
NO_CALL = "Sorry, I can't {phrase} with the tools I have here."
SHAPES = (("call", 0.45), ("parallel", 0.1), ("no_call", 0.3), ("result", 0.15))
"""Nearly a third no-call cases: trained on fewer, the specialist calls an offered function that does not fit."""
CANNOT = re.compile(r"\b(can't|cannot|can not|unable|not able|don't have|do not have|no tool|isn't available|not available)\b", re.IGNORECASE)
STOPWORDS = {"what", "with", "that", "this", "from", "your", "have", "please", "there", "about", "would", "could", "give", "tell", "make", "need", "want"}


def draw_values(rng, names: list[str], vocab: dict[str, list]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name in dict.fromkeys(names):
        if name in NUMBERS:
            values[name] = rng.randint(*NUMBERS[name])
        elif name in TWINS:
            base = TWINS[name]
            values.setdefault(base, rng.choice(vocab[base]))
            values[name] = rng.choice([v for v in vocab[base] if v != values[base]])
        elif name.endswith("_email"):
            person = name.removesuffix("_email")
            values.setdefault(person, rng.choice(vocab["person"]))
            values[name] = f"{values[person].lower()}@{'example.com' if vocab is VOCAB['train'] else 'mail.test'}"
        elif name not in values:
            values[name] = rng.choice(vocab[name])
    return values


def bind(template: Any, values: dict[str, Any]) -> Any:
    """Argument template → value: "{n}" alone keeps the value's type (a number stays a number)."""
    if isinstance(template, str):
        names = slots(template)
        whole = len(names) == 1 and template == f"{{{names[0]}}}"
        return values[names[0]] if whole else fill(template, values)
    if isinstance(template, list):
        return [bind(t, values) for t in template]
    if isinstance(template, dict):
        return {k: bind(t, values) for k, t in template.items()}
    return template


def needed_slots(*templates: Any) -> list[str]:
    names: list[str] = []
    for template in templates:
        if isinstance(template, str):
            names += slots(template)
        elif isinstance(template, (list, tuple)):
            names += needed_slots(*template)
        elif isinstance(template, dict):
            names += needed_slots(*template.values())
    return names


def offered(rng, pool: list[Function], needed: Function | None, exclude: Function | None = None) -> list[dict]:
    others = [f for f in pool if f is not needed and f is not exclude]
    chosen = rng.sample(others, rng.randint(1, 2) if needed is None else rng.randint(0, 2))
    chosen += [needed] if needed is not None else []
    rng.shuffle(chosen)
    return [f.schema for f in chosen]


def call(name: str, arguments: dict, index: int) -> dict:
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def calls_of(message: Message) -> list[dict]:
    calls = []
    for made in message.get("tool_calls") or []:
        try:
            arguments = json.loads(made["function"].get("arguments") or "{}")
        except json.JSONDecodeError:
            arguments = None
        calls.append({"name": made["function"]["name"], "arguments": arguments})
    return calls


def canonical(calls: list[dict]) -> list[str]:
    return sorted(json.dumps(c, sort_keys=True) for c in calls)


def mentions(text: str, value: str, near: list[str]) -> bool:
    """``value`` as a whole token (not "18" inside "118" or "18.5"), and, when ``near`` is given,
    within a few words of one of those context words."""
    for found in re.finditer(rf"(?<![\w.]){re.escape(value)}(?![\w]|\.\d)", text, re.IGNORECASE):
        window = text[max(0, found.start() - 40) : found.end() + 40].lower()
        if not near or any(word.lower() in window for word in near):
            return True
    return False


def content_words(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in STOPWORDS}


class AgentFamily(Family):
    name = "agent"
    recipe = Recipe(examples=200, epochs=2, learning_rate=3e-3)
    max_tokens = 128
    withheld = "12 functions of kinds never trained on (rides, parcels, banking, locks, fitness, …), with a vocabulary of their own"

    def generate(
        self, split: Split, n: int, seed: int = 0, functions: list[str] | None = None, shapes: dict[str, float] | None = None, **options: Any
    ) -> list[Case]:
        """``functions`` narrows the train functions drawn from (``train`` and ``wording``);
        ``shapes`` reweighs the case shapes (call, parallel, no_call, result; default ``SHAPES``)."""
        weights = dict(SHAPES) if shapes is None else shapes
        if unknown := set(weights) - {s for s, _ in SHAPES}:
            raise ValueError(f"unknown agent case shapes {sorted(unknown)}; known: {', '.join(s for s, _ in SHAPES)}")
        rng = rng_for(split, seed, self.name)
        if split == "heldout":
            pool, vocab = HELDOUT_FUNCTIONS, VOCAB["heldout"]
        else:
            pool, vocab = [BY_NAME[f] for f in functions] if functions else TRAIN_FUNCTIONS, VOCAB["train"]
        templates = "train" if split == "train" else "heldout"
        cases = []
        for _ in range(n):
            shape = rng.choices(list(weights), list(weights.values()))[0]
            parallel = [f for f in pool if templates in PARALLEL.get(f.name, ("", {}))[1]]
            if shape == "parallel" and parallel:
                cases.append(self._parallel(rng, pool, rng.choice(parallel), templates, vocab))
                continue
            with_results = [f for f in pool if f.result]
            function = rng.choice(with_results if shape == "result" and with_results else pool)
            text, arguments = rng.choice(getattr(function, templates))
            result = function.result
            values = draw_values(rng, needed_slots(text, arguments, *((result.output, result.answer) if result else ())), vocab)
            request = {"role": "user", "content": fill(text, values)}
            arguments = bind(arguments, values)
            if shape == "no_call":
                answer = {"role": "assistant", "content": fill(NO_CALL, {"phrase": function.phrase})}
                cases.append(Case(self.name, [request], answer, offered(rng, pool, None, exclude=function), {"kind": "no_call", "function": function.name, "topic": f"{request['content']} {function.phrase} {function.description}"}))
            elif shape == "result" and result:
                made = {"role": "assistant", "content": None, "tool_calls": [call(function.name, arguments, 0)]}
                output = bind(result.output, values)
                reply = {"role": "tool", "tool_call_id": "call_0", "content": json.dumps(output)}
                answer = {"role": "assistant", "content": fill(result.answer, values)}
                facts = [{"value": str(v), "near": [fill(w, values) for w in result.near.get(k, [])]} for k, v in output.items() if not isinstance(v, bool)]
                cases.append(Case(self.name, [request, made, reply], answer, offered(rng, pool, function), {"kind": "result", "function": function.name, "facts": facts}))
            else:
                answer = {"role": "assistant", "content": None, "tool_calls": [call(function.name, arguments, 0)]}
                cases.append(Case(self.name, [request], answer, offered(rng, pool, function), {"kind": "call", "function": function.name, "calls": [{"name": function.name, "arguments": arguments}]}))
        return cases

    def _parallel(self, rng, pool: list[Function], function: Function, templates: str, vocab: dict) -> Case:
        param, texts = PARALLEL[function.name]
        text = rng.choice(texts[templates])
        names = slots(text)
        values = draw_values(rng, names, vocab)
        calls = [{"name": function.name, "arguments": {param: values[s]}} for s in names]
        answer = {"role": "assistant", "content": None, "tool_calls": [call(c["name"], c["arguments"], i) for i, c in enumerate(calls)]}
        return Case(self.name, [{"role": "user", "content": fill(text, values)}], answer, offered(rng, pool, function), {"kind": "call", "function": function.name, "calls": calls})

    def score(self, case: Case, message: Message) -> dict[str, float]:
        """call: the calls match exactly (names and parsed arguments, order-free). no_call: no
        call and a real answer: it says the thing can't be done here and names what was asked.
        result: no call, and every value of the tool result stands in the answer in context."""
        text = (message.get("content") or "").strip()
        made = calls_of(message)
        if "<tool_" in text:  # a malformed call (or an echoed result) is not a plain answer
            made = made or [{"name": None, "arguments": None}]
        kind = case.check["kind"]
        if kind == "call":
            right = canonical(made) == canonical(case.check["calls"])
        elif kind == "no_call":
            right = not made and CANNOT.search(text) is not None and bool(content_words(text) & content_words(case.check["topic"]))
        else:
            plain = not made and not text.startswith("{")
            right = plain and all(mentions(text, f["value"], f["near"]) for f in case.check["facts"])
        return {"score": float(right), "called": float(bool(made)), "kind_call": float(kind == "call"), "kind_no_call": float(kind == "no_call")}

    def failure(self, case: Case, message: Message) -> str:
        made, kind = calls_of(message), case.check["kind"]
        if kind == "call":
            if not made:
                return "no call"
            names = sorted(c["name"] or "" for c in made)
            return "wrong tool" if names != sorted(c["name"] for c in case.check["calls"]) else "wrong arguments"
        if made:
            return "spurious call" if kind == "no_call" else "repeated call"
        return "vague refusal" if kind == "no_call" else "facts missing"

    def summarise(self, scores: list[dict[str, float]]) -> dict[str, float]:
        """Also: exact match on call cases, and — over call and no-call cases only — no-call
        precision (answers without a call that were meant to be) and recall (no-call cases
        answered without a call)."""
        summary = super().summarise(scores)
        calls = [s for s in scores if s["kind_call"]]
        no_calls = [s for s in scores if s["kind_no_call"]]
        silent = [s for s in calls + no_calls if not s["called"]]
        summary["exact_match"] = sum(s["score"] for s in calls) / len(calls) if calls else 0.0
        summary["no_call_precision"] = sum(s["kind_no_call"] for s in silent) / len(silent) if silent else 0.0
        summary["no_call_recall"] = sum(not s["called"] for s in no_calls) / len(no_calls) if no_calls else 0.0
        summary["no_call_score"] = sum(s["score"] for s in no_calls) / len(no_calls) if no_calls else 0.0
        return summary

    def contents(self, case: Case) -> list[str]:
        texts = [m["content"] for m in case.messages if m["role"] in ("user", "tool")] + [case.answer.get("content") or ""]
        return texts + [json.dumps(c["arguments"], ensure_ascii=False) for c in calls_of(case.answer)]

    def entities(self, case: Case) -> set[str]:
        names = {t["function"]["name"] for t in case.tools or []}
        values = {v for c in calls_of(case.answer) for v in strings_in(c["arguments"])}
        return names | values


def strings_in(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


FAMILY = AgentFamily()
