"""The scripted user: it answers only what is asked, counts redundant questions, changes its mind
on cue, refuses to repeat remembered facts, ends on "done" (not on "nothing was booked") or on
seeing the work done, and gives each session its own turns. Run:
pytest tests/bench/test_living_simulator.py

Each answer is checked for what it must not contain too (the other withheld slots), so a user
that over-shares fails even when the asked value is present."""

from molt.bench.living.phrases import mentions
from molt.bench.living.scenarios import scenarios
from molt.bench.living.simulator import GOODBYE, MAX_USER_TURNS, UserSimulator, asked_slots, questions, reports_done


def find(split: str, scenario_id: str):
    return next(s for s in scenarios(split) if s.id == scenario_id)


def test_questions_are_sentences_that_ask():
    assert questions("I booked it. What time works? Let me know the date.") == ["What time works?", "Let me know the date."]
    profile = find("test", "book_checkup.asymmetry").profile
    assert asked_slots("Done! The time is noted.", profile) == []
    assert asked_slots("Which dentist, and what time?", profile) == ["doctor", "time"]


def test_the_user_reveals_only_the_slot_asked_for():
    s = find("test", "book_checkup.asymmetry")
    user = UserSimulator(s)
    assert user.open(0) == s.sessions[0].opening
    reply = user.reply("Sure! What time should it be?", turn=1)
    assert mentions(reply, s.profile["time"].spoken)
    assert not mentions(reply, s.profile["date"].spoken) and not mentions(reply, s.profile["doctor"].spoken)
    assert [(a.slot, a.redundant) for a in user.asks] == [("time", False)]


def test_asking_again_is_redundant_and_repeats_nothing():
    s = find("test", "book_checkup.corrupted_tool")  # everything stated in the opening
    user = UserSimulator(s)
    user.open(0)
    reply = user.reply("Which date did you want?", turn=1)
    assert reply == "I already told you the date." and user.redundant == 1
    user.reply("And what time?", turn=2)
    assert user.redundant == 2 and not user.ended


def test_a_remembered_fact_is_not_repeated_in_a_later_session():
    s = find("test", "book_checkup.memory")
    user = UserSimulator(s)
    user.open(0)
    assert user.reply("Added it. All done.", turn=1) == GOODBYE and user.ended
    user.open(1)
    reply = user.reply("Who is your dentist?", turn=2)
    assert reply == "I told you my dentist last time." and not mentions(reply, s.profile["doctor"].spoken)
    assert user.asks[-1].redundant and user.asks[-1].session == 1


def test_the_user_changes_their_mind_and_reports_world_changes_on_cue():
    s = find("test", "book_checkup.user_noise")
    user = UserSimulator(s)
    user.open(0)
    reply = user.reply("ok", turn=1)
    assert s.cue.text in reply and mentions(reply, s.profile["date"].spoken)
    changed = find("test", "book_checkup.world_change")
    user = UserSimulator(changed)
    user.open(0)
    assert changed.change.notice in user.reply("What time?", turn=1)


def test_done_with_a_question_ends_and_a_negated_done_does_not():
    s = find("train", "restock_item.corrupted_tool")
    user = UserSimulator(s)
    user.open(0)
    assert user.reply("Ordered! Anything else I can help with?", turn=1) == GOODBYE
    assert reports_done("No problem, it's booked.") and reports_done("All set.")
    for text in ("Sorry, nothing was booked.", "I could not book it, so it is not scheduled.", "The order wasn't placed.", "No event was added."):
        assert not reports_done(text), text
        user = UserSimulator(s)
        user.open(0)
        assert user.reply(text, turn=1) != GOODBYE and not user.ended


def test_seeing_the_goal_met_ends_the_session():
    user = UserSimulator(find("train", "restock_item.corrupted_tool"))
    user.open(0)
    assert user.reply("There you go.", turn=1) != GOODBYE and not user.ended
    assert user.reply("There you go.", turn=2, finished=True) == GOODBYE and user.ended


def test_each_session_has_its_own_turn_budget():
    s = find("test", "book_checkup.memory_stale")
    user = UserSimulator(s)
    for session in range(len(s.sessions)):
        assert user.open(session) == s.sessions[session].opening
        replies = [user.reply("ok", turn=t) for t in range(1, MAX_USER_TURNS)]
        assert user.ended and user.turns == MAX_USER_TURNS and replies[-1].endswith("I have to go now.")
        assert not any(r.endswith("I have to go now.") for r in replies[:-1])
