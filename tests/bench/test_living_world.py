"""The living-bench world: OpenAI tool schemas, clear errors instead of exceptions, faults, and
changes by someone else. Run: pytest tests/bench/test_living_world.py

Every bad call below must come back as ``{"error": ...}`` naming the problem; a raise would end a
benchmark run on the first malformed model output."""

import pytest

from molt.bench.living.world import ACTION_TOOLS, READ_TOOLS, TOOLS, Fault, World


def make_world(fault: Fault | None = None) -> World:
    spec = {
        "today": "2025-06-02",
        "events": [{"id": "evt-1", "title": "Book club", "date": "2025-06-05", "time": "18:00", "with": ""}],
        "contacts": [{"name": "Amara Okonkwo", "phone": "+1 555 0101", "email": "amara@example.org", "relation": "sister"}],
        "catalog": [{"name": "Star Map Poster", "price": 25.0, "category": "gifts", "tags": ["astronomy"]}, {"name": "Pocket Telescope", "price": 37.0, "category": "gifts", "tags": ["astronomy"]}],
        "inbox": [{"from": "Meridian Power", "text": "Your bill is $84.20."}],
        "balance": 100.0,
        "budgets": {"utilities": 90.0},
    }
    return World(spec, fault)


def test_tools_are_openai_function_schemas():
    names = [t["function"]["name"] for t in TOOLS]
    assert all(t["type"] == "function" and t["function"]["description"] and t["function"]["parameters"]["type"] == "object" for t in TOOLS)
    assert set(names) == READ_TOOLS | ACTION_TOOLS and len(names) == len(set(names)) == 11


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("teleport", {}, "unknown tool 'teleport'"),
        ("add_event", {"title": "x", "date": "2025-06-05"}, "'time' is a required property"),
        ("add_event", {"title": "x", "date": "June 5", "time": "10:00"}, "date must be a date as YYYY-MM-DD, got 'June 5'"),
        ("add_event", {"title": "x", "date": "2025-02-30", "time": "10:00"}, "not a real date"),
        ("add_event", {"title": "x", "date": "2025-06-05", "time": "4pm"}, "time must be a time as HH:MM"),
        ("pay", {"payee": "A", "amount": "ten"}, "'ten' is not of type 'number'"),
        ("pay", {"payee": "A", "amount": 5, "tip": 1}, "'tip' was unexpected"),
        ("pay", {"payee": "A", "amount": 500}, "insufficient funds"),
        ("pay", {"payee": "A", "amount": 5, "category": "fun"}, "unknown budget category 'fun'"),
        ("move_event", {"event_id": "evt-9", "time": "10:00"}, "no event with id 'evt-9'; use list_events"),
        ("move_event", {"event_id": "evt-1"}, "needs a new date, a new time, or both"),
        ("cancel_event", {"event_id": "evt-9"}, "no event with id 'evt-9'"),
        ("send_message", {"to": "Amara", "text": "hi"}, "no contact named 'Amara'; use find_contact"),
        ("place_order", {"item": "Telescope"}, "no item named 'Telescope'; use search_items"),
        ("place_order", {"item": "Pocket Telescope", "quantity": 0}, "less than the minimum of 1"),
        ("place_order", {"item": "Pocket Telescope", "quantity": 3}, "insufficient funds"),
        ("list_events", [], "must be a JSON object"),
    ],
)
def test_bad_calls_return_clear_errors(name, arguments, says):
    world = make_world()
    result = world.call(name, arguments)
    assert set(result) == {"error"} and says in result["error"], result
    assert world.calls[-1].failed and world.balance == 100.0 and len(world.events) == 1


def test_calls_change_the_world_and_are_recorded():
    world = make_world()
    world.session, world.turn = 1, 3
    assert world.call("find_contact", {"query": "sister"})["contacts"][0]["name"] == "Amara Okonkwo"
    assert [i["name"] for i in world.call("search_items", {"query": "astronomy gift", "max_price": 30})["items"]] == ["Star Map Poster"]
    assert world.call("pay", {"payee": "Meridian Power", "amount": 84.2, "category": "utilities"})["budget_left"] == 5.8
    assert world.call("move_event", {"event_id": "evt-1", "time": "19:00"})["event"]["time"] == "19:00"
    assert world.call("send_message", {"to": "amara okonkwo", "text": "hi"})["sent"]["to"] == "Amara Okonkwo"
    assert world.call("cancel_event", {"event_id": "evt-1"})["cancelled"]["id"] == "evt-1"
    assert world.balance == 15.8 and world.events == [] and world.payments[0]["memo"] == ""
    assert [(c.name, c.session, c.turn) for c in world.calls][0] == ("find_contact", 1, 3) and len(world.calls) == 6


@pytest.mark.parametrize("kind", ["unavailable", "truncated"])
def test_a_fault_corrupts_only_the_nth_call_of_its_tool(kind):
    world = make_world(Fault("read_messages", 2, kind))
    first, second, third = (world.call("read_messages", {}) for _ in range(3))
    assert first == third == {"messages": world.inbox}
    assert "messages" not in second and ("temporarily unavailable" in second.get("error", "") or second["partial"].endswith("…"))
    assert [c.corrupted for c in world.calls] == [False, True, False]


def test_changes_by_someone_else_are_not_calls():
    world = make_world()
    world.apply((("move_event", "evt-1", "2025-06-06", "17:00"), ("set_price", "Star Map Poster", 40.0), ("receive", "Clinic", "Moved."), ("charge", "utilities", 20.0), ("add_event", "Quiz", "2025-06-07", "20:00")))
    assert world.events[0]["date"] == "2025-06-06" and world.catalog[0]["price"] == 40.0 and world.inbox[-1]["from"] == "Clinic"
    assert world.budgets["utilities"] == 70.0 and world.balance == 80.0 and world.events[-1]["title"] == "Quiz" and world.calls == []
    with pytest.raises(ValueError, match="unknown world change"):
        world.apply((("flood", 1),))


def test_a_malformed_call_does_not_use_up_the_fault():
    world = make_world(Fault("list_events", 1, "unavailable"))
    assert "date must be" in world.call("list_events", {"date": "soon"})["error"]
    assert "temporarily unavailable" in world.call("list_events", {})["error"] and world.calls[-1].corrupted
