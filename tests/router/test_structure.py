"""A turn as the router sees it (``RouteRequest``) and its structure features: the last user
message is the text, tool calls and results after it are the turn's, a request for an offered
function matches it better than a question near it, code, programming languages, a surface in
the history, and only the recent history counts. Run: pytest tests/router/test_structure.py"""

import json

from molt.router.base import RouteRequest
from molt.router.features import unshouted
from molt.router.structure import HISTORY_WINDOW, STRUCTURE, structure_features, tool_text

RIDE = {"type": "function", "function": {"name": "request_ride", "description": "Request a car to a destination.",
                                         "parameters": {"type": "object", "properties": {"dropoff": {"type": "string", "description": "Destination"},
                                                                                         "vehicle": {"type": "string", "enum": ["economy", "xl"]}}}}}
CALL = {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "request_ride", "arguments": "{}"}}]}
RESULT = {"role": "tool", "tool_call_id": "c", "content": '{"eta": 4}'}
SURFACE = json.dumps({"version": "v0.9", "createSurface": {"surfaceId": "s", "catalogId": "urn:molt:a2ui:catalog:1"}})


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def test_the_turn_is_the_last_user_message_and_what_follows_it():
    request = RouteRequest.of([{"role": "system", "content": "be nice"}, user("hi"), {"role": "assistant", "content": "hello"},
                               user([{"type": "text", "text": "ride "}, {"type": "text", "text": "home"}]), CALL, RESULT], [RIDE])
    assert request.text == "ride home" and request.tools == (RIDE,)
    assert request.history == (user("hi"), {"role": "assistant", "content": "hello"}) and request.replies == (CALL, RESULT)
    features = structure_features(request)
    assert list(features) == list(STRUCTURE)
    assert features["turn_tool_calls"] == features["turn_tool_results"] == features["history"] == 1.0
    assert features["history_tool_results"] == 0.0
    assert RouteRequest.of([]).text == "" and RouteRequest("x").history == ()


def test_a_request_for_an_offered_function_matches_it_more_than_a_question_near_it():
    asks = structure_features(RouteRequest("Get me an xl ride to the stadium", (RIDE,)))
    near = structure_features(RouteRequest("Is it rude not to tip drivers?", (RIDE,)))
    none = structure_features(RouteRequest("Get me an xl ride to the stadium"))
    assert asks["tools_offered"] == 1.0 and none["tools_offered"] == none["tool_words"] == 0.0
    for name in ("tool_words", "tool_word_share", "tool_trigrams"):
        assert asks[name] > near[name]
    assert "xl" in tool_text(RIDE) and "dropoff" in tool_text(RIDE)  # enum values and parameter names count


def test_code_languages_surfaces_and_the_shape_of_the_ask():
    traceback = 'Why?\n\n```python\nx = d["k"]\n```\nTraceback (most recent call last):\n  File "a.py", line 1\nKeyError: \'k\''
    assert structure_features(RouteRequest(traceback))["text_code"] > structure_features(RouteRequest("Why is the sky blue?"))["text_code"]
    assert structure_features(RouteRequest("port it to Rust"))["text_language"] == 1.0
    assert structure_features(RouteRequest("let's go home"))["text_language"] == 0.0
    edit = RouteRequest.of([user("a form"), {"role": "assistant", "content": SURFACE}, user("add a phone field")])
    assert structure_features(edit)["history_surface"] == 1.0 and structure_features(RouteRequest("add a phone field"))["history_surface"] == 0.0
    mine = structure_features(RouteRequest("Cancel my ride R-22"))
    asked = structure_features(RouteRequest("¿Por qué el cielo es azul?"))
    assert (mine["text_personal"], mine["text_question"], mine["text_digits"]) == (1.0, 0.0, 1.0)
    assert (asked["text_personal"], asked["text_question"], asked["text_digits"]) == (0.0, 1.0, 0.0)


def test_only_the_recent_history_counts():
    old = [user("a form"), {"role": "assistant", "content": SURFACE}]
    filler = [m for i in range(HISTORY_WINDOW // 2) for m in (user(f"q{i}"), {"role": "assistant", "content": f"a{i}"})]
    assert structure_features(RouteRequest.of([*old, *filler[2:], user("and?")]))["history_surface"] == 1.0
    assert structure_features(RouteRequest.of([*old, *filler, user("and?")]))["history_surface"] == 0.0


def test_shouting_is_read_in_lowercase():
    assert unshouted("WHERE IS MY PARCEL?!") == "where is my parcel?!"
    assert unshouted("Send it to NASA HQ today") == "Send it to NASA HQ today" and unshouted("OK") == "OK"
