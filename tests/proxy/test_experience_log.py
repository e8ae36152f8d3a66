"""The experience log through the proxy: every turn's id in its headers, feedback on it, what the
log holds per turn, and ``molt experience export`` turning it into data ``molt train sft`` reads.
Run: pytest tests/proxy/test_experience_log.py"""

import json
import os
import subprocess
import sys

import httpx
import openai
from sqlalchemy.orm import Session

from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.registry.database import open_database
from molt.registry.schema import ExperienceTurn
from molt.train.data import read_chat_jsonl
from scripted_stack import CALL, CODE_A, CODE_Q, WEATHER, WEATHER_Q, hcp


def test_turns_are_logged_with_their_feedback_and_export_as_training_data(engine_url, tmp_path):
    db = f"sqlite:///{tmp_path / 'molt.db'}"
    with ServerThread(create_app(hcp(engine_url), db=db, pair="pair-test")) as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
        coded = client.chat.completions.with_raw_response.create(model="molt", messages=[CODE_Q])
        called = client.chat.completions.with_raw_response.create(model="molt", messages=[WEATHER_Q], tools=[WEATHER])
        call = called.parse().choices[0].message.model_dump(exclude_none=True)
        result = {"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": "12°C and clear"}
        after_tool = client.chat.completions.with_raw_response.create(model="molt", messages=[WEATHER_Q, call, result], tools=[WEATHER])
        streamed = client.chat.completions.with_raw_response.create(model="molt", messages=[CODE_Q], stream=True)
        for _ in streamed.parse():
            pass
        ids = [r.headers["x-molt-turn-id"] for r in (coded, called, after_tool, streamed)]
        assert len(set(ids)) == 4

        assert httpx.post(f"{url}/v1/feedback", json={"turn_id": ids[0], "rating": "up", "comment": "exactly"}).json()["rating"] == "up"
        assert httpx.post(f"{url}/v1/feedback", json={"turn_id": ids[3], "rating": "down"}).status_code == 200
        unknown = httpx.post(f"{url}/v1/feedback", json={"turn_id": "nope", "rating": "up"})
        assert unknown.status_code == 404 and "no logged turn 'nope'" in unknown.json()["error"]["message"]
        assert httpx.post(f"{url}/v1/feedback", json={"turn_id": ids[0], "rating": "meh"}).status_code == 400

    with Session(open_database(db)) as session:  # the server stopped: everything it accepted is written
        coded_row, called_row, tool_row, streamed_row = (session.get(ExperienceTurn, i) for i in ids)
        assert coded_row.pair == "pair-test" and coded_row.specialist == "coding" and coded_row.route["reason"] == "guardrail: 'python'"
        assert coded_row.answer["content"] == CODE_A and coded_row.view["messages"][-1] == CODE_Q
        assert set(coded_row.latency) == {"route", "summary_wait", "answer", "turn"} and coded_row.latency["turn"] >= coded_row.latency["answer"] > 0
        assert called_row.answer["tool_calls"][0]["function"]["name"] == CALL["tool_calls"][0]["function"]["name"]
        assert called_row.view["tools"][0]["function"]["name"] == "get_weather"
        assert tool_row.route["kind"] == "tool_results" and tool_row.tool_results == [result]
        assert streamed_row.answer["content"] == CODE_A and "answer" in streamed_row.latency

    export = lambda *args: subprocess.run([sys.executable, "-m", "molt", "experience", "export", "--db", db, *args], capture_output=True, text=True, env={**os.environ})
    everything = export("--out", str(tmp_path / "all.jsonl"), "--since", "1h")
    assert everything.returncode == 0 and "4 turn(s) exported" in everything.stderr
    examples = read_chat_jsonl(tmp_path / "all.jsonl")  # what molt train sft reads
    assert len(examples) == 4 and examples[1].tools[0]["function"]["name"] == "get_weather"
    liked = export("--feedback", "up", "--specialist", "coding")
    rows = [json.loads(line) for line in liked.stdout.splitlines()]
    assert [r["molt"]["turn"] for r in rows] == [ids[0]] and rows[0]["messages"][-1] == {"role": "assistant", "content": CODE_A, "trainable": True}
    for row in map(json.loads, (tmp_path / "all.jsonl").read_text().splitlines()):  # only the logged answer is a target
        assistants = [m for m in row["messages"] if m["role"] == "assistant"]
        assert assistants[-1]["trainable"] is True and all(m["trainable"] is False for m in assistants[:-1])
    assert any(len(json.loads(line)["messages"]) > 3 for line in (tmp_path / "all.jsonl").read_text().splitlines())  # the tool turn has context
    assert export("--since", "yesterday").returncode == 2 and export("--feedback", "sideways").returncode == 2
