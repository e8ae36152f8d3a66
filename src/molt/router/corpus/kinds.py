"""The kinds of turn the outside-style corpus builds, per label, each a function of a random
stream and a split.

Each kind is one shape of turn, present in both splits, filled from the split's own domains,
topics, languages, templates and styles (``domains.py``, ``phrasing.py``, ``styles.py``). The
shapes are the ones a router gets wrong when it reads only the words: functions offered with a
request for one of them (agent) or with a question that needs none (chat), code pasted with a
traceback (coding), a UI surface or code earlier in the conversation, tool results in the turn.
"""

import json
import random
import re
from dataclasses import dataclass

from molt.router.base import Message
from molt.router.corpus import phrasing as P
from molt.router.corpus.domains import DOMAINS, CorpusSplit, Domain, Tool
from molt.router.corpus.styles import NEUTRAL, STYLES, WRAPPERS, lower_first
from molt.ui.a2ui import button, surface_messages

SLOT = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class Built:
    messages: list[Message]
    tools: list[dict] | None
    tags: frozenset[str]


class Draw:
    """One turn being built: the random stream, the split, and the tags gathered so far."""

    def __init__(self, rng: random.Random, split: CorpusSplit, kind: str):
        self.rng, self.split = rng, split
        self.tags = {f"kind:{kind}"}
        self.values: dict[str, str] = {}

    def domain(self, tools: bool = False) -> Domain:
        domain = self.rng.choice([d for d in DOMAINS.values() if d.split == self.split and (d.tools or not tools)])
        self.tags.add(f"domain:{domain.name}")
        return domain

    def language(self, p_native: float, available: tuple[str, ...] | None = None) -> str:
        languages = [lang for lang in P.LANGUAGES[self.split] if available is None or lang in available]
        language = self.rng.choice(languages) if languages and self.rng.random() < p_native else "en"
        self.tags.add(f"lang:{language}")
        return language

    def fill(self, template: str, values: dict[str, tuple[str, ...]]) -> str:
        def one(match: re.Match) -> str:
            slot = match.group(1)
            if slot not in self.values:
                self.values[slot] = self.rng.choice(values[slot])
            return self.values[slot]

        return SLOT.sub(one, template)

    def styled(self, text: str, language: str = "en", neutral: bool = False, wrapped: bool = True) -> str:
        """``text`` in one of the split's styles; ``wrapped=False`` spares a short reply the
        styles that wrap it in a story or a letter, which nobody writes around "thanks"."""
        names = NEUTRAL[self.split] if neutral or language != "en" else tuple(n for n in STYLES[self.split] if wrapped or n not in WRAPPERS)
        name = self.rng.choice(names)
        self.tags.add(f"style:{name}")
        return STYLES[self.split][name](text, self.rng)

    def offered(self, domain: Domain, needed: Tool | None = None, distractors: int = 2) -> list[dict]:
        """The domain's tools (always the needed one) and up to ``distractors`` from other domains of the split."""
        own = [t for t in domain.tools if t is needed or self.rng.random() < 0.6] or [self.rng.choice(domain.tools)]
        others = [t for d in DOMAINS.values() if d.split == self.split and d is not domain for t in d.tools]
        tools = own + self.rng.sample(others, self.rng.randint(0, distractors))
        self.rng.shuffle(tools)
        return [t.schema for t in tools]

    def built(self, messages: list[Message], tools: list[dict] | None = None) -> Built:
        return Built(messages, tools or None, frozenset(self.tags))


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def listed(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1] if len(items) > 1 else items[0]


def key(name: str) -> str:
    return re.sub(r"\W+", "_", name.lower()).strip("_")


def tool_ask(draw: Draw, domain: Domain, tool: Tool, p_native: float = 0.25) -> str:
    language = draw.language(p_native, tuple(tool.native))
    template = draw.rng.choice(tool.native[language] if language != "en" else tool.asks)
    return draw.styled(draw.fill(template, domain.values), language)


def tool_call(draw: Draw, domain: Domain, tool: Tool) -> list[Message]:
    """The assistant's call of ``tool`` with the values drawn so far, and the tool's result."""
    arguments = {p: draw.values[p] for p in tool.params if p in draw.values}
    call = {"id": "call_0", "type": "function", "function": {"name": tool.name, "arguments": json.dumps(arguments)}}
    result = SLOT.sub(lambda m: draw.values.get(m.group(1), draw.rng.choice(domain.values.get(m.group(1), ("1",)))), tool.result)
    return [{"role": "assistant", "content": None, "tool_calls": [call]}, {"role": "tool", "tool_call_id": "call_0", "content": result}]


def surface(domain: Domain) -> str:
    """A genui answer (a form over the domain's fields), as a specialist writes it."""
    fields = [{"id": key(f), "component": "TextField", "label": f.capitalize(), "value": {"path": f"/{key(f)}"}} for f in domain.fields[:3]]
    components = [{"id": "root", "component": "Column", "children": ["title", *[f["id"] for f in fields], "save"]},
                  {"id": "title", "component": "Text", "text": f"New {domain.thing}", "variant": "h2"}, *fields, *button("save", "Submit", "submit")]
    return surface_messages(f"new_{key(domain.thing)}", components, {key(f): "" for f in domain.fields[:3]})


def code_answer(domain: Domain) -> str:
    field = key(domain.fields[-1])
    return f"```python\ndef total_{field}({key(domain.things)}):\n    return sum(r[\"{field}\"] for r in {key(domain.things)})\n```"


# --- agent ---------------------------------------------------------------------------------

def agent_call(draw: Draw) -> Built:
    domain = draw.domain(tools=True)
    tool = draw.rng.choice(domain.tools)
    return draw.built([user(tool_ask(draw, domain, tool))], draw.offered(domain, tool))


def agent_short(draw: Draw) -> Built:
    domain = draw.domain(tools=True)
    tool = draw.rng.choice([t for t in domain.tools if t.short])
    draw.tags.add("lang:en")
    text = draw.styled(draw.fill(draw.rng.choice(tool.short), domain.values), wrapped=False)
    return draw.built([user(text)], draw.offered(domain, tool, distractors=1))


def agent_result(draw: Draw) -> Built:
    domain = draw.domain(tools=True)
    tool = draw.rng.choice(domain.tools)
    ask = tool_ask(draw, domain, tool)
    return draw.built([user(ask), *tool_call(draw, domain, tool)], draw.offered(domain, tool))


def agent_follow_up(draw: Draw) -> Built:
    domain = draw.domain(tools=True)
    first, then = draw.rng.sample(domain.tools, 2)
    history = [user(draw.fill(draw.rng.choice(first.asks), domain.values)), *tool_call(draw, domain, first), {"role": "assistant", "content": draw.rng.choice(P.RESULT_ANSWERS)}]
    draw.tags.add("lang:en")
    ask = draw.fill(draw.rng.choice(then.asks), domain.values)
    text = draw.styled(draw.rng.choice(P.AGENT_FOLLOW_UPS[draw.split]).format(ask=lower_first(ask)))
    return draw.built([*history, user(text)], draw.offered(domain, then))


def agent_missing_tool(draw: Draw) -> Built:
    """An action whose function is not offered (others are): the agent says it cannot."""
    domain = draw.domain(tools=True)
    ask = tool_ask(draw, domain, draw.rng.choice(domain.tools), p_native=0.0)
    other = draw.rng.choice([d for d in DOMAINS.values() if d.split == draw.split and d is not domain])
    return draw.built([user(ask)], [t.schema for t in other.tools])


# --- chat ----------------------------------------------------------------------------------

def knowledge_question(draw: Draw) -> tuple[str, Domain | None]:
    """A question that asks for no action: a topic's, a domain's, or one in another language."""
    language = draw.language(0.2)
    if language != "en":
        return draw.styled(draw.rng.choice(P.NATIVE_QUESTIONS[language]), language), None
    where = draw.rng.random()
    if where < 0.3:
        topic = draw.rng.choice(sorted(P.TOPICS[draw.split]))
        draw.tags.add(f"topic:{topic}")
        return draw.styled(draw.rng.choice(P.TOPICS[draw.split][topic])), None
    if where < 0.55:
        draw.tags.add(f"topic:{P.TRIVIA_TOPIC[draw.split]}")
        template, vocabulary = draw.rng.choice(P.TRIVIA[draw.split])
        return draw.styled(draw.fill(template, vocabulary)), None
    domain = draw.domain()
    return draw.styled(draw.rng.choice(domain.questions)), domain


def chat_question(draw: Draw) -> Built:
    return draw.built([user(knowledge_question(draw)[0])])


def chat_question_with_tools(draw: Draw) -> Built:
    """Functions offered, none asked for: often the same domain's, so the words overlap."""
    text, domain = knowledge_question(draw)
    return draw.built([user(text)], draw.offered(domain or draw.domain(tools=True)))


def chat_small_talk(draw: Draw) -> Built:
    language = draw.language(0.3)
    draw.tags.add(f"topic:{P.SMALL_TALK_TOPIC[draw.split]}")
    text = draw.rng.choice(P.NATIVE_SMALL_TALK[language] if language != "en" else P.SMALL_TALK[draw.split])
    tools = draw.offered(draw.domain(tools=True)) if draw.rng.random() < 0.4 else None
    return draw.built([user(draw.styled(text, language, wrapped=False))], tools)


def chat_recall(draw: Draw) -> Built:
    """A question about a detail said earlier in the conversation."""
    domain = draw.domain()
    asked, answered, again = draw.rng.choice(domain.recall)
    draw.tags.add("lang:en")
    tools = draw.offered(domain) if draw.rng.random() < 0.3 else None
    return draw.built([user(asked), {"role": "assistant", "content": answered}, user(draw.styled(again))], tools)


def chat_thanks_after(draw: Draw) -> Built:
    """Thanks after a surface, code or a tool result: the history's structure is not the turn's."""
    domain = draw.domain(tools=True)
    shape = draw.rng.choice(("surface", "code", "tool"))
    if shape == "surface":
        earlier = [user(f"Make a form for a new {domain.thing}."), {"role": "assistant", "content": surface(domain)}]
    elif shape == "code":
        earlier = [user(f"Write a function that totals the {domain.fields[-1]} of my {domain.things}."), {"role": "assistant", "content": code_answer(domain)}]
    else:
        tool = draw.rng.choice(domain.tools)
        earlier = [user(draw.fill(tool.asks[0], domain.values)), *tool_call(draw, domain, tool), {"role": "assistant", "content": draw.rng.choice(P.RESULT_ANSWERS)}]
    draw.tags.add("lang:en")
    text = draw.styled(draw.rng.choice(P.THANKS_AFTER[draw.split]), wrapped=False)
    return draw.built([*earlier, user(text)], draw.offered(domain) if shape == "tool" else None)


# --- coding --------------------------------------------------------------------------------

def coding_function(draw: Draw) -> Built:
    domain = draw.domain()
    lang = draw.rng.choice(P.PROGRAMMING_LANGUAGES[draw.split])
    language = draw.language(0.15)
    if language != "en":
        text = draw.styled(draw.rng.choice(P.NATIVE_CODING_ASKS[language]).format(lang=lang, task=domain.task), language)
    else:
        text = draw.styled(draw.rng.choice(P.CODING_ASKS[draw.split]).format(lang=lang, task=domain.task))
    tools = draw.offered(domain) if domain.tools and draw.rng.random() < 0.3 else None
    return draw.built([user(text)], tools)


def coding_problem(draw: Draw) -> Built:
    domain = draw.domain()
    draw.tags.add("lang:en")
    statement = P.PROBLEM[draw.split].format(title=f"{domain.things.title()} Planner", task=domain.task)
    return draw.built([user(f"{draw.styled(draw.rng.choice(P.PROBLEM_ASKS[draw.split]))}\n\n{statement}")])


def coding_bug(draw: Draw) -> Built:
    domain = draw.domain()
    lang, code, error = draw.rng.choice(P.BUGS[draw.split])
    names = {"field": key(draw.rng.choice(domain.fields)), "things_key": key(domain.things), "field_key": key(domain.fields[0])}
    code, error = (SLOT.sub(lambda m: names.get(m.group(1), m.group(0)), s).replace("{{", "{").replace("}}", "}") for s in (code, error))
    draw.tags.add("lang:en")
    ask = draw.styled(draw.rng.choice(P.BUG_ASKS[draw.split]))
    fenced = f"```{lang}\n{code}\n```" if draw.rng.random() < 0.7 else code
    tools = draw.offered(domain) if domain.tools and draw.rng.random() < 0.2 else None
    return draw.built([user(f"{ask}\n\n{fenced}\n\n{error}")], tools)


def coding_explain(draw: Draw) -> Built:
    draw.domain()
    draw.tags.add("lang:en")
    ask = draw.styled(draw.rng.choice(P.EXPLAIN_ASKS[draw.split]))
    return draw.built([user(f"{ask}\n\n{draw.rng.choice(P.SNIPPETS)}")])


def coding_follow_up(draw: Draw) -> Built:
    domain = draw.domain()
    draw.tags.add("lang:en")
    lang = draw.rng.choice([p for p in P.PROGRAMMING_LANGUAGES[draw.split] if p != "Python"] or ["Python"])
    text = draw.styled(draw.rng.choice(P.CODE_FOLLOW_UPS[draw.split]).format(lang=lang))
    earlier = [user(f"Write a function that totals the {domain.fields[-1]} of my {domain.things}."), {"role": "assistant", "content": code_answer(domain)}]
    return draw.built([*earlier, user(text)])


# --- genui ---------------------------------------------------------------------------------

def ui_request(draw: Draw, domain: Domain) -> str:
    fields = draw.rng.sample(domain.fields, draw.rng.randint(2, 4))
    values = {"thing": domain.thing, "things": domain.things, "fields": listed(fields), "field": fields[0]}
    language = draw.language(0.15)
    templates = P.NATIVE_UI_ASKS[language] if language != "en" else P.UI_ASKS[draw.split]
    return draw.styled(draw.rng.choice(templates).format(**values), language)


def genui_build(draw: Draw) -> Built:
    domain = draw.domain()
    tools = draw.offered(domain) if domain.tools and draw.rng.random() < 0.2 else None
    return draw.built([user(ui_request(draw, domain))], tools)


def genui_edit(draw: Draw) -> Built:
    """A change to the surface shown earlier in the conversation."""
    domain = draw.domain()
    draw.tags.add("lang:en")
    field = draw.rng.choice(domain.fields)
    text = draw.styled(draw.rng.choice(P.UI_EDITS[draw.split]).format(field=field, Things=domain.things.title()))
    earlier = [user(f"Make a form for a new {domain.thing}."), {"role": "assistant", "content": surface(domain)}]
    return draw.built([*earlier, user(text)])


KINDS = {
    "agent": {agent_call: 0.4, agent_short: 0.15, agent_result: 0.2, agent_follow_up: 0.15, agent_missing_tool: 0.1},
    "chat": {chat_question: 0.15, chat_question_with_tools: 0.35, chat_small_talk: 0.15, chat_recall: 0.2, chat_thanks_after: 0.15},
    "coding": {coding_function: 0.3, coding_problem: 0.2, coding_bug: 0.25, coding_explain: 0.1, coding_follow_up: 0.15},
    "genui": {genui_build: 0.75, genui_edit: 0.25},
}
"""Each label's kinds of turn and how often each is drawn."""
