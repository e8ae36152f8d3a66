"""``molt bench memory``: does molt remember what each user told it, across conversations?

Each simulated user talks to the routed system (``model=molt``) in three sessions, each a new
conversation:

1. they mention facts about themselves in passing, some as ``my X is Y`` and some only in their
   own phrasing ("I drive a Honda Civic"), which only the extraction hop can turn into a fact;
2. they change some of them ("my gift budget is now 80": the old value is a **stale trap**) and
   mention someone else's ("my brother's dentist is Dr. Vance": an **other person trap**);
3. they ask about each fact, each question in a fresh conversation.

A question is answered correctly when the answer holds the user's current value and neither
the stale nor the other person's value. Three systems answer the same users:

- **no memory**: the questions alone (nothing carries across conversations);
- **full history**: the questions after every earlier session's messages in one conversation,
  the long-context way (no memory; the prompt grows with the user's history);
- **memory**: the questions alone with the request's ``user``: molt's per-user memory, written
  after each turn in the background and put into the answering view within its token budget.

It prints accuracy (and the traps' failures), prompt tokens per question and seconds per
question, per system, for each seed, and the spread over seeds.
"""

import random
import statistics
import time
from dataclasses import asdict, dataclass, field

import httpx
from rich.console import Console

from molt.bench.report import print_rows
from molt.hcp import HCP
from molt.http_server import ServerThread
from molt.proxy.server import create_app as create_proxy_app
from molt.registry.database import scratch_database
from molt.stack import engine_thread

SYSTEMS = ("no memory", "full history", "memory")


@dataclass(frozen=True)
class Topic:
    key: str
    question: str
    statement: str
    """How the user says it in passing; ``{v}`` is the value."""
    change: str
    """How they say it changed (``{v}``: the new value)."""
    other: str
    """Someone else's value of it (``{v}``)."""
    values: tuple[str, ...]


TOPICS = (
    Topic("dentist", "Who is my dentist?", "My dentist is {v}, and I need to book a cleaning soon.", "I switched dentists: my dentist is now {v}.",
          "My brother's dentist is {v}, he likes him.", ("Dr. Okafor", "Dr. Haines", "Dr. Moreau", "Dr. Lindqvist", "Dr. Castellano", "Dr. Abara")),
    Topic("home city", "Which city do I live in?", "I live in {v}, the weather has been lovely.", "Big news: I moved to {v} last week.",
          "My cousin lives in {v}.", ("Porto", "Bergen", "Valencia", "Utrecht", "Tampere", "Ljubljana")),
    Topic("gift budget", "What is my budget for gifts?", "My gift budget is {v} euros this year.", "My gift budget is now {v} euros.",
          "My sister's gift budget is {v} euros.", ("45", "60", "85", "120", "150", "35")),
    Topic("car", "What car do I drive?", "I drive a {v}, and it needs new tyres.", "I sold my old car; now I drive a {v}.",
          "My neighbour drives a {v}.", ("Honda Civic", "Skoda Octavia", "Volvo V60", "Toyota Yaris", "Kia Niro", "Mazda CX-5")),
    Topic("gym day", "Which day do I go to the gym?", "I go to the gym every {v}, it keeps me sane.", "I go to the gym on {v} now instead.",
          "My partner goes to the gym every {v}.", ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday")),
    Topic("pharmacy", "Which pharmacy do I use?", "I get my prescriptions at {v}.", "I changed pharmacies, I use {v} now.",
          "My mother uses {v}.", ("Greenleaf Pharmacy", "Corner Chemist", "Riverside Pharmacy", "Maple Apothecary", "Northgate Drugs", "Bluebell Pharmacy")),
)


@dataclass(frozen=True)
class Question:
    topic: str
    text: str
    answer: str
    stale: str | None
    other: str | None


@dataclass(frozen=True)
class User:
    id: str
    sessions: tuple[tuple[str, ...], tuple[str, ...]]
    """The user turns of sessions 1 and 2 (session 3 is the questions)."""
    questions: tuple[Question, ...]


def users(count: int, seed: int) -> list[User]:
    """``count`` users, each with four topics: two stated and kept, one changed, one with another
    person's value said after the user's own."""
    rng = random.Random(seed)
    made = []
    for n in range(count):
        topics = rng.sample(TOPICS, 4)
        first, second, questions = [], [], []
        for i, topic in enumerate(topics):
            value, new, other = rng.sample(topic.values, 3)
            first.append(topic.statement.format(v=value))
            if i == 2:
                second.append(topic.change.format(v=new))
                questions.append(Question(topic.key, topic.question, new, value, None))
            elif i == 3:
                second.append(topic.other.format(v=other))
                questions.append(Question(topic.key, topic.question, value, None, other))
            else:
                questions.append(Question(topic.key, topic.question, value, None, None))
        turns = [" ".join(first[:2]), " ".join(first[2:])]
        made.append(User(f"bench-{seed}-{n}", (tuple(turns), tuple(second)), tuple(questions)))
    return made


def correct(answer: str, question: Question) -> bool:
    text = answer.lower()
    return question.answer.lower() in text and not any(v and v.lower() in text for v in (question.stale, question.other))


@dataclass(frozen=True)
class MemoryBenchConfig:
    users: int = 6
    seeds: tuple[int, ...] = (0,)
    max_tokens: int = 48


@dataclass
class Tally:
    correct: int = 0
    stale: int = 0
    other: int = 0
    questions: int = 0
    prompt_tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    answers: list[dict] = field(default_factory=list)

    def summary(self) -> dict:
        return {"answers": self.answers, "accuracy": self.correct / self.questions, "stale_answers": self.stale, "other_person_answers": self.other, "questions": self.questions,
                "prompt_tokens_per_question": statistics.mean(self.prompt_tokens), "seconds_per_question": statistics.mean(self.seconds)}


class Client:
    def __init__(self, url: str):
        self.http = httpx.Client(base_url=url, timeout=900)

    def ask(self, messages: list[dict], user: str | None) -> tuple[dict, float]:
        start = time.perf_counter()
        response = self.http.post("/v1/chat/completions", json={"model": "molt", "messages": messages, **({"user": user} if user else {})})
        response.raise_for_status()
        return response.json(), time.perf_counter() - start

    def talk(self, turns: tuple[str, ...], user: str | None) -> list[dict]:
        """One conversation of ``turns``; its messages."""
        messages = []
        for text in turns:
            messages.append({"role": "user", "content": text})
            reply, _ = self.ask(messages, user)
            messages.append({"role": "assistant", "content": reply["choices"][0]["message"].get("content") or ""})
        return messages

    def settle(self, user: str) -> None:
        """Wait until the proxy has written the facts of ``user``'s finished turns (its memory
        listing waits for them)."""
        self.http.get("/v1/memory", params={"user": user}).raise_for_status()


def run_system(system: str, client: Client, people: list[User]) -> Tally:
    tally = Tally()
    for person in people:
        history: list[dict] = []
        if system != "no memory":
            user = person.id if system == "memory" else None
            for turns in person.sessions:
                history += client.talk(turns, user)
            client.settle(person.id)
        for question in person.questions:
            before = history if system == "full history" else []
            reply, seconds = client.ask([*before, {"role": "user", "content": question.text}], person.id if system == "memory" else None)
            answer = reply["choices"][0]["message"].get("content") or ""
            right = correct(answer, question)
            tally.questions += 1
            tally.correct += right
            tally.stale += bool(question.stale and question.stale.lower() in answer.lower())
            tally.other += bool(question.other and question.other.lower() in answer.lower())
            tally.prompt_tokens.append(reply["usage"]["prompt_tokens"])
            tally.seconds.append(seconds)
            tally.answers.append({"user": person.id, "question": question.text, "expected": question.answer, "answer": answer, "correct": right})
    return tally


def run(hcp: HCP, config: MemoryBenchConfig, console: Console) -> dict:
    per_seed: dict[int, dict[str, dict]] = {}
    with engine_thread(hcp) as contract:
        contract = contract.model_copy(update={"generation": contract.generation.model_copy(update={"max_tokens": config.max_tokens})})
        for seed in config.seeds:
            people = users(config.users, seed)
            per_seed[seed] = {}
            for system in SYSTEMS:
                console.print(f"[dim]seed {seed}: {system}, {len(people)} users ...[/]")
                with scratch_database() as db, ServerThread(create_proxy_app(contract, db=db)) as url:
                    per_seed[seed][system] = run_system(system, Client(url), people).summary()
    rows, spread = [], {}
    for system in SYSTEMS:
        accuracies = [per_seed[s][system]["accuracy"] for s in config.seeds]
        spread[system] = {"accuracy_mean": statistics.mean(accuracies), "accuracy_min": min(accuracies), "accuracy_max": max(accuracies)}
        figures = [per_seed[s][system] for s in config.seeds]
        rows.append([system, f"{statistics.mean(accuracies):.3f} [{min(accuracies):.3f}, {max(accuracies):.3f}]",
                     sum(f["stale_answers"] for f in figures), sum(f["other_person_answers"] for f in figures),
                     statistics.mean(f["prompt_tokens_per_question"] for f in figures), statistics.mean(f["seconds_per_question"] for f in figures)])
    print_rows(f"memory across conversations: {config.users} users x 4 questions, seeds {', '.join(map(str, config.seeds))}",
               ["system", "accuracy [min, max over seeds]", "stale answers", "other person's", "prompt tokens / question", "s / question"], rows, console)
    return {"config": asdict(config), "per_seed": {str(s): v for s, v in per_seed.items()}, "spread": spread}
