"""What the user says about themselves becomes facts, in their own words only; facts are ranked
by shared words and by the base's hidden-state cosine. Run: pytest tests/harness/test_memory_extraction.py"""

from datetime import datetime, timezone

from molt.harness.memory import Fact, extracted_facts, relevant, stated_facts
from molt.harness.memory_search import HiddenStateSimilarity
from molt.router.features import HiddenStateFeatures, RouteFeatures

T = datetime(2026, 5, 1, tzinfo=timezone.utc)


def test_my_x_is_y_statements_are_facts_and_questions_are_not():
    assert stated_facts("Hi! My dentist is Dr. Okafor and I need a cleaning.") == [("dentist", "Dr. Okafor")]
    assert stated_facts("my gift budget is now 80.") == [("gift budget", "80")]
    assert stated_facts("I live in Porto. My sister's city is Rome, my name is Ana") == [("sister's city", "Rome"), ("name", "Ana"), ("home city", "Porto")]
    assert stated_facts("what is my name?") == [] and stated_facts("My question is whether it rains") == []
    assert stated_facts("My sister says her dentist is Dr. Lee") == []  # someone else's dentist is not the user's


def test_a_stated_value_stops_before_a_trailing_time_adverb():
    assert stated_facts("My dentist is Dr. Sato these days") == [("dentist", "Dr. Sato")]
    assert stated_facts("My physio is Jana Král now.") == [("physio", "Jana Král")]
    assert stated_facts("my gym is Fitlab at the moment, sadly") == [("gym", "Fitlab")]
    assert stated_facts("My carpool buddy is Yusuf Demir by the way") == [("carpool buddy", "Yusuf Demir")]
    assert stated_facts("my office is Leeds nowadays") == [("office", "Leeds")]
    assert stated_facts("My shop is Nowhere Books") == [("shop", "Nowhere Books")]  # a word that only starts like one stays


def test_an_extracted_value_must_be_in_the_users_own_words():
    said = "I'm vegetarian, and I see Dr. Okafor for my teeth"
    reply = "diet: vegetarian\n- dentist: Dr. Okafor\nfavourite colour: green\nnone\nno colon here\ndentist: Dr. Okafor (the user)"
    assert extracted_facts(reply, said) == [("diet", "vegetarian"), ("dentist", "Dr. Okafor")]
    assert extracted_facts("none", said) == [] and extracted_facts("", said) == []


def test_meaning_ranks_facts_that_share_no_word():
    facts = [Fact("ana", "diet", "vegetarian", T, T, "user", None, 1), Fact("ana", "car", "a blue Toyota", T, T, "user", None, 2)]
    words = lambda note: len(note.split())  # noqa: E731
    near = lambda text, texts: [0.9 if t.startswith("diet") else 0.1 for t in texts]  # noqa: E731
    assert [f.key for f in relevant(facts, "Book a table for dinner", 40, words)] == ["car", "diet"]  # no shared word: newest first
    assert [f.key for f in relevant(facts, "Book a table for dinner", 40, words, near)] == ["diet", "car"]
    assert [f.key for f in relevant(facts, "Is my car fixed?", 40, words, near)][0] == "car"  # a shared word outweighs meaning


def test_hidden_state_similarity_is_a_cached_cosine():
    features = RouteFeatures(HiddenStateFeatures("tiny", 2))
    similarity = HiddenStateSimilarity(features)
    texts = ["diet: vegetarian", "car: a blue Toyota", "diet: vegetarian"]
    cosines = similarity("diet: vegetarian", texts)
    assert len(cosines) == 3 and abs(cosines[0] - 1) < 1e-4 and cosines[0] == cosines[2] and -1 <= cosines[1] < 1
    assert {"diet: vegetarian", "car: a blue Toyota"} <= set(features.tool_states)  # the next turn reads them from the cache
