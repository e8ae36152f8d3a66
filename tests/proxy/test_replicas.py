"""Replicated proxies: two ``molt proxy serve --replicated`` processes on one real PostgreSQL
database, in front of one engine. Conversations hop between them turn by turn, each turn sent
the moment the previous answer arrives, and continue as on one proxy: the next specialist's view
holds the summary the other replica wrote (not a stand-in for a history never seen), Responses
chains continue across replicas, and every turn is logged exactly once.
Run: pytest tests/proxy/test_replicas.py"""

import concurrent.futures
import os
import subprocess
import sys
import time
import tomllib
import uuid

import openai
import pytest
import tomli_w
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from molt.engine.config import EngineConfig
from molt.engine.server import create_app as create_engine_app
from molt.hcp import default_hcp_path
from molt.http_server import ServerThread
from molt.models import load_model
from molt.proxy.loop import stand_in_summary
from molt.registry.database import open_database
from molt.registry.schema import ExperienceTurn, TurnSummary
from database_rows import wait_for
from molt_processes import free_port, wait_until_healthy
from molt.registry.local_postgres import create_database

TOPICS = ["the river town", "the old mill", "the night train", "the harbour"]


@pytest.fixture(scope="module")
def replicas(postgres, tmp_path_factory):
    """(database URL, [client of replica A, client of replica B]) on one engine (tiny model)."""
    db = create_database(postgres, f"molt_{uuid.uuid4().hex[:12]}")
    folder = tmp_path_factory.mktemp("replicas")
    with ServerThread(create_engine_app(EngineConfig(model="tiny"), load_model("tiny"))) as engine_url:
        data = tomllib.loads(default_hcp_path().read_text())
        data["model"].update(base="tiny", engine_url=f"{engine_url}/v1")
        data["generation"].update(max_tokens=12, temperature=0.0, summary_max_tokens=8)
        hcp_file = folder / "tiny.toml"
        hcp_file.write_text(tomli_w.dumps(data))
        ports, processes = [free_port(), free_port()], []
        try:
            for port in ports:
                command = [sys.executable, "-m", "molt", "proxy", "serve", "--hcp", str(hcp_file), "--port", str(port), "--replicated", "--db", db]
                processes.append(subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "MOLT_HOME": str(folder)}))
            for process, port in zip(processes, ports):
                assert wait_until_healthy(process, port, seconds=180), "a replica did not start"
            yield db, [openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0) for port in ports]
        finally:
            for process in processes:
                process.terminate()
            for process in processes:
                process.wait(timeout=60)


def logged(db: str, turn_id: str) -> ExperienceTurn:
    """The turn's experience row; a replica commits it shortly after answering."""
    engine = open_database(db)
    try:
        return wait_for(engine, ExperienceTurn, turn_id, seconds=60)
    finally:
        engine.dispose()


def hop(clients: list[openai.OpenAI], topic: str) -> list[tuple[str, str, dict]]:
    """One conversation of four turns, alternating replicas and specialists (the last streamed):
    (turn id, specialist, answer message) per turn."""
    messages, turns = [], []
    plan = [("chat", f"Tell me about {topic}."), ("coding", "Write a function that counts its houses."), ("chat", "And who lives there?"), ("coding", "Now test that function.")]
    for index, (model, text) in enumerate(plan):
        client = clients[index % 2]
        messages.append({"role": "user", "content": text})
        if index < 3:
            raw = client.chat.completions.with_raw_response.create(model=model, messages=messages)
            message = raw.parse().choices[0].message.model_dump(exclude_none=True)
        else:
            with client.chat.completions.with_streaming_response.create(model=model, messages=messages, stream=True) as raw:
                content = "".join(chunk.choices[0].delta.content or "" for chunk in raw.parse() if chunk.choices)
            message = {"role": "assistant", "content": content}
        messages.append({"role": "assistant", "content": message.get("content") or ""})
        turns.append((raw.headers["x-molt-turn-id"], model, messages[-1]))
    return turns


def summary_of(db: str, turn_id: str) -> str:
    engine = open_database(db)
    try:
        with Session(engine) as session:
            return session.get(TurnSummary, turn_id).summary
    finally:
        engine.dispose()


def test_conversations_hop_between_replicas_turn_by_turn(replicas):
    db, clients = replicas
    with concurrent.futures.ThreadPoolExecutor(len(TOPICS)) as pool:  # four conversations at once, each hopping
        conversations = list(pool.map(lambda topic: hop(clients, topic), TOPICS))
    for turns in conversations:
        rows = [logged(db, turn_id) for turn_id, _, _ in turns]
        assert [row.specialist for row in rows] == [model for _, model, _ in turns]
        for index in range(1, len(turns)):
            earlier_id, earlier_model, earlier_answer = turns[index - 1]
            summary = summary_of(db, earlier_id)  # written by the other replica, after its answer
            view = rows[index].view["messages"]
            assert {"role": "assistant", "content": f"[{earlier_model}] {summary}"} in view, (index, view)
            if summary != stand_in_summary(earlier_answer):  # the tiny model's summary is not the answer's start
                assert {"role": "assistant", "content": f"[{earlier_model}] {stand_in_summary(earlier_answer)}"} not in view
        own = rows[2].view["messages"]  # chat's second turn sees its first verbatim, answered by the other replica
        assert turns[0][2] in own


def test_a_responses_chain_continues_on_the_other_replica(replicas):
    db, (a, b) = replicas
    first = a.responses.with_raw_response.create(model="chat", input="Tell me about the lighthouse.")
    second = b.responses.with_raw_response.create(model="coding", input="Count its steps in code.", previous_response_id=first.parse().id)
    third = a.responses.with_raw_response.create(model="chat", input="Who keeps it?", previous_response_id=second.parse().id)
    assert third.parse().previous_response_id == second.parse().id
    ids = [r.headers["x-molt-turn-id"] for r in (first, second, third)]
    view = logged(db, ids[2]).view["messages"]
    assert {"role": "user", "content": "Tell me about the lighthouse."} in view
    assert {"role": "assistant", "content": f"[coding] {summary_of(db, ids[1])}"} in view


def test_every_turn_is_logged_once_by_the_replica_that_answered_it(replicas):
    """As many experience rows as turns: none lost in a hop, none added by a replica continuing
    a conversation it did not answer (an adopted history is never logged again)."""
    db, clients = replicas
    engine = open_database(db)

    def count() -> int:
        with Session(engine) as session:
            return session.execute(select(func.count()).select_from(ExperienceTurn)).scalar_one()

    try:
        before = count()
        turns = hop(clients, "the quarry")
        for turn_id, _, _ in turns:
            logged(db, turn_id)
        time.sleep(1.0)  # anything else written for these turns would have landed by now
        assert count() == before + len(turns)
    finally:
        engine.dispose()
