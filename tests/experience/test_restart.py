"""A conversation outlives the process serving it: started through the official openai client,
``molt up`` killed with SIGKILL and started again, it continues from the same
``previous_response_id``, and the next specialist's view holds the same summary.
Run: pytest tests/experience/test_restart.py"""

import os
import signal
import subprocess
import sys
import tomllib

import openai
import tomli_w

from molt.hcp import default_hcp_path
from molt.registry.database import open_database
from molt.registry.schema import ExperienceTurn, StoredConversation, TurnSummary
from database_rows import wait_for
from molt_processes import free_port, wait_until_healthy


def start_up(hcp_file, port: int, env: dict) -> subprocess.Popen:
    process = subprocess.Popen(
        [sys.executable, "-m", "molt", "up", "--hcp", str(hcp_file), "--port", str(port), "--engine-port", str(free_port())],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
    )
    if wait_until_healthy(process, port, seconds=180):
        return process
    assert process.poll() is None, "molt up exited"
    raise TimeoutError("molt up did not answer /health")


def test_a_killed_stack_continues_the_conversation_with_the_same_summary(tmp_path):
    data = tomllib.loads(default_hcp_path().read_text())
    data["model"]["base"] = "tiny"
    data["generation"].update(max_tokens=12, temperature=0.0, summary_max_tokens=8)
    hcp_file = tmp_path / "tiny.toml"
    hcp_file.write_text(tomli_w.dumps(data))
    db = f"sqlite:///{tmp_path / 'molt.db'}"
    env = {**os.environ, "MOLT_DB": db}
    engine = open_database(db)
    port = free_port()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)

    process = start_up(hcp_file, port, env)
    try:
        raw = client.responses.with_raw_response.create(model="chat", input="Tell me about the river town.")
        first, first_turn = raw.parse(), raw.headers["x-molt-turn-id"]
        wait_for(engine, StoredConversation, first.id)
        summary = wait_for(engine, TurnSummary, first_turn).summary  # written after the snapshot
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
    assert process.returncode == -signal.SIGKILL

    process = start_up(hcp_file, port, env)
    try:
        raw = client.responses.with_raw_response.create(model="coding", input="And what happened next?", previous_response_id=first.id)
        second, second_turn = raw.parse(), raw.headers["x-molt-turn-id"]
        assert second.previous_response_id == first.id and second.model_extra["molt"]["specialist"] == "coding"
        logged = wait_for(engine, ExperienceTurn, second_turn)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=60)
    view = logged.view["messages"]
    assert {"role": "user", "content": "Tell me about the river town."} in view
    assert {"role": "assistant", "content": f"[chat] {summary}"} in view  # the chat turn as the coding view sees it
