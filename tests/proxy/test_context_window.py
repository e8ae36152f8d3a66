"""Every view fits ``[model] context_window`` minus the answer's ``max_tokens``: the adapter's
own oldest turns collapse to their summaries first, then the oldest turns drop out, the same
way every time; a turn too long on its own is a 400. Counted in the engine's own tokens.
Run: pytest tests/proxy/test_context_window.py"""

import asyncio

import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.models import load_model
from molt.models.renderer import get_renderer
from molt.proxy.loop import ContextTooLong, TurnLoop
from molt.proxy.server import create_app
from molt.proxy.views import Turn, Window, own_view
from scripted_stack import hcp

MAX_TOKENS = 48


def contract(context_window: int, engine_url: str = "http://127.0.0.1:9/v1"):
    data = hcp(engine_url).model_dump(exclude_none=True)
    data["model"]["context_window"] = context_window
    return parse_hcp(data)


def conversation(n: int) -> list[Turn]:
    """Alternating coding / chat turns, each with a written summary."""
    return [
        Turn("coding" if i % 2 == 0 else "chat", {"role": "user", "content": f"Question {i}: " + "tell me more " * 12}, ({"role": "assistant", "content": f"Answer {i}: " + "here is more " * 12},), f"summary {i}")
        for i in range(n)
    ]


@pytest.fixture(scope="module")
def renderer():
    return get_renderer(load_model("tiny").tokenizer)


def fit(renderer, context_window: int, turns: list[Turn], current: list[dict]) -> tuple[list[dict], TurnLoop]:
    loop = TurnLoop(contract(context_window), None, None, renderer, summaries=False)
    system = loop.system((), "coding")
    return asyncio.run(loop.fitted(system, tuple(turns), "coding", current, None, MAX_TOKENS)), loop


def test_a_view_that_fits_is_left_whole_and_one_token_less_cuts_the_oldest_own_turn(renderer):
    turns, current = conversation(6), [{"role": "user", "content": "And now?"}]
    loop = TurnLoop(contract(2048), None, None, renderer)
    whole = own_view(loop.system((), "coding"), turns, "coding", current)
    needed = len(renderer.generation_prompt(whole))
    exact, _ = fit(renderer, needed + MAX_TOKENS, turns, current)
    assert exact == whole
    cut, loop = fit(renderer, needed + MAX_TOKENS - 1, turns, current)
    assert cut == own_view(loop.system((), "coding"), turns, "coding", current, Window(collapsed=1))  # turn 0 is coding's own: collapsed
    assert len(renderer.generation_prompt(cut)) <= needed - 1
    assert loop.metrics.cuts == {"collapsed": 1}


def test_long_conversations_collapse_every_own_turn_before_dropping_the_oldest(renderer):
    turns, current = conversation(40), [{"role": "user", "content": "And now?"}]
    view, loop = fit(renderer, 512, turns, current)
    assert len(renderer.generation_prompt(view)) <= 512 - MAX_TOKENS
    assert loop.metrics.cuts["collapsed"] == 20 and loop.metrics.cuts["dropped"] > 0
    kept = [m["content"] for m in view if m["role"] == "user"][:-1]
    first = int(kept[0].split(":")[0].removeprefix("Question "))
    assert kept == [t.user["content"] for t in turns[first:]]  # the newest turns, in order
    assert not any(m["content"].startswith("Answer") for m in view)  # own turns are summaries now
    assert fit(renderer, 512, turns, current)[0] == view  # the same cut every time


def test_a_turn_too_long_on_its_own_is_refused(renderer):
    with pytest.raises(ContextTooLong, match="context window of 256"):
        fit(renderer, 256, conversation(2), [{"role": "user", "content": "word " * 400}])


def test_a_conversation_longer_than_the_engine_keeps_being_answered(engine_url):
    """Through the proxy on the tiny engine (2,048 tokens): 16 long turns, every one answered."""
    app = create_app(contract(2048, engine_url))
    with ServerThread(app) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        messages = []
        for i in range(16):
            messages.append({"role": "user", "content": f"Turn {i}. " + "Please keep this in mind. " * 30})
            reply = client.chat.completions.create(model="chat", messages=messages, max_tokens=16)
            messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        with pytest.raises(openai.BadRequestError, match="context window"):
            client.chat.completions.create(model="chat", messages=[{"role": "user", "content": "word " * 3000}])
    assert app.state.service.loop.metrics.cuts["dropped"] > 0
