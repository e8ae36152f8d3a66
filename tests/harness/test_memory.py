"""Per-user memory on SQLite and PostgreSQL: the newest valid fact wins (valid-from, then
recorded-at, then the row written last), older rows stay as history, a past moment can be asked
about as known then, forgetting deletes history too, and no user ever sees another's facts.
Run: pytest tests/harness/test_memory.py"""

from datetime import datetime, timedelta, timezone

import pytest

from molt.harness.memory import Memory, MemoryInputError
from molt.registry.database import open_database

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=timezone.utc)


def day(n: int) -> datetime:
    return T0 + timedelta(days=n)


@pytest.fixture
def memory(db_url):
    engine = open_database(db_url)
    yield Memory(engine)
    engine.dispose()


def test_the_newest_valid_fact_wins_and_the_older_ones_are_its_history(memory):
    memory.remember("ana", "home city", "Porto", valid_from=day(0), now=day(0))
    memory.remember("ana", "Home  City", "Lisbon", valid_from=day(10), now=day(10))  # she moved
    memory.remember("ana", "home city", "Faro", valid_from=day(5), now=day(12))  # learned late, true earlier: not the newest valid
    memory.remember("ana", "dentist", "Dr. Reis", now=day(1))

    assert [(f.key, f.value) for f in memory.facts("ana")] == [("dentist", "Dr. Reis"), ("home city", "Lisbon")]
    assert [f.value for f in memory.history("ana", "HOME CITY")] == ["Lisbon", "Faro", "Porto"]
    assert {f.key: f.value for f in memory.facts("ana", at=day(6))}["home city"] == "Faro"  # true then, as known now
    assert {f.key: f.value for f in memory.facts("ana", at=day(6), known_at=day(11))}["home city"] == "Porto"  # as known before Faro was told
    assert memory.facts("ana", at=day(-1)) == []


def test_ties_are_broken_by_recording_time_then_by_the_row_written_last(memory):
    memory.remember("ana", "coffee", "black", valid_from=day(1), now=day(2))
    memory.remember("ana", "coffee", "flat white", valid_from=day(1), now=day(3))
    assert memory.facts("ana")[0].value == "flat white"
    memory.remember("ana", "coffee", "espresso", valid_from=day(1), now=day(3))
    assert memory.facts("ana")[0].value == "espresso"


def test_a_fact_valid_only_from_a_future_day_is_history_until_then(memory):
    now = datetime.now(timezone.utc)
    memory.remember("ana", "address", "1 Old Road", valid_from=now - timedelta(days=30))
    memory.remember("ana", "address", "9 New Street", valid_from=now + timedelta(days=30))
    assert memory.facts("ana")[0].value == "1 Old Road"
    assert memory.facts("ana", at=now + timedelta(days=31))[0].value == "9 New Street"
    assert [f.value for f in memory.history("ana", "address")] == ["9 New Street", "1 Old Road"]


def test_one_users_facts_never_reach_another(memory):
    memory.remember("ana", "home city", "Lisbon")
    memory.remember("ben", "home city", "Oslo")
    assert [f.value for f in memory.facts("ana")] == ["Lisbon"] and [f.value for f in memory.facts("ben")] == ["Oslo"]
    assert memory.facts("carla") == [] and memory.history("carla", "home city") == []
    assert memory.forget("ana") == 1
    assert memory.facts("ana") == [] and [f.value for f in memory.facts("ben")] == ["Oslo"]


def test_forgetting_a_key_deletes_its_history_and_nothing_else(memory):
    memory.remember("ana", "home city", "Porto", valid_from=day(0), now=day(0))
    memory.remember("ana", "home city", "Lisbon", valid_from=day(1), now=day(1))
    memory.remember("ana", "dentist", "Dr. Reis", now=day(1))
    assert memory.forget("ana", "Home City") == 2
    assert memory.history("ana", "home city") == [] and [f.key for f in memory.facts("ana")] == ["dentist"]
    assert memory.forget("ana", "home city") == 0


@pytest.mark.parametrize("call, message", [
    (lambda m: m.remember("ana bob", "k", "v"), "a user id"),
    (lambda m: m.remember("ana", "  ", "v"), "key is 1 to 200"),
    (lambda m: m.remember("ana", "k", ""), "value is 1 to 2000"),
    (lambda m: m.remember("ana", "k", "v", source="rumour"), "source is one of"),
    (lambda m: m.remember("ana", "k", "v", valid_from=datetime(2026, 1, 1)), "carries its zone"),
    (lambda m: m.facts("../etc"), "a user id"),
])
def test_bad_input_is_a_clear_error_and_writes_nothing(memory, call, message):
    with pytest.raises(MemoryInputError, match=message):
        call(memory)
    assert memory.facts("ana") == []
