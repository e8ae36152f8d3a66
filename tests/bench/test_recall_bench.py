"""``molt bench memory``: its users carry the traps it claims, its scorer rejects stale and
other people's values, and a toy run goes through all three systems. Run: pytest tests/bench/test_recall_bench.py"""

from rich.console import Console

from molt.bench.recall import SYSTEMS, MemoryBenchConfig, Question, correct, run, users
from molt.harness.memory import stated_facts
from scripted_hcp import tiny_hcp


def test_each_user_states_changes_and_is_asked_about_four_facts():
    people = users(8, seed=0)
    assert people == users(8, seed=0) and people != users(8, seed=1)
    for person in people:
        said = " ".join(t for session in person.sessions for t in session)
        assert len(person.questions) == 4 and len({q.topic for q in person.questions}) == 4
        stale = [q for q in person.questions if q.stale]
        other = [q for q in person.questions if q.other]
        assert len(stale) == 1 and len(other) == 1
        assert said.index(stale[0].stale) < said.index(stale[0].answer)  # the old value comes first, the new one wins
        assert all(q.answer in said for q in person.questions) and other[0].other in said
        assert not any(q.answer in q.text for q in person.questions)  # a question never gives its answer away
    assert len({p.id for p in people}) == 8


def test_the_scorer_takes_the_current_value_only():
    question = Question("gift budget", "What is my budget for gifts?", "80", stale="45", other=None)
    assert correct("Your gift budget is 80 euros.", question)
    assert not correct("It was 45, now 80.", question) and not correct("I don't know.", question) and not correct("", question)
    trap = Question("dentist", "Who is my dentist?", "Dr. Okafor", None, other="Dr. Vance")
    assert not correct("Dr. Vance or Dr. Okafor", trap) and correct("dr. okafor", trap)


def test_someone_elses_fact_is_not_stated_as_the_users():
    for person in users(8, seed=3):
        other = next(q for q in person.questions if q.other)
        facts = stated_facts(" ".join(person.sessions[1]))
        assert all(key != other.topic for key, value in facts if other.other in value)  # "sister's gift budget", never "gift budget"


def test_a_toy_run_answers_every_question_in_each_system():
    result = run(tiny_hcp("http://unused"), MemoryBenchConfig(users=1, seeds=(0,), max_tokens=8), Console(quiet=True))
    figures = result["per_seed"]["0"]
    assert list(figures) == list(SYSTEMS) and all(f["questions"] == 4 for f in figures.values())
    tokens = {system: f["prompt_tokens_per_question"] for system, f in figures.items()}
    assert tokens["full history"] > tokens["memory"] > tokens["no memory"]  # memory put the user's facts in the view
    assert set(result["spread"]) == set(SYSTEMS)
