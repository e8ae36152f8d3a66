"""An engine process killed in the middle of a streamed turn: the client gets an error, the
conversation stays as it was, and once the engine is back the same turn goes through.
Run: pytest tests/proxy/test_engine_failure.py"""

import asyncio
import signal
import socket
import subprocess
import sys
import time

import httpx
import openai
import pytest

from molt.hcp import parse_hcp
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.proxy.store import fingerprint
from scripted_stack import CODE_A, CODE_Q, hcp, write_scripted_adapters


def start_engine(root, port: int) -> subprocess.Popen:
    command = [sys.executable, "-m", "molt", "engine", "serve", "--model", "tiny", "--dtype", "float32", "--port", str(port), "--adapters-root", str(root), "--lora", "coder=coder", "--lora", "agent=agent"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the engine did not start")


def test_engine_killed_mid_turn(tmp_path):
    write_scripted_adapters(tmp_path)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = hcp(f"http://127.0.0.1:{port}/v1").model_dump(exclude_none=True)
    data["generation"]["max_tokens"] = 1500  # the chat answer streams for seconds: time to kill the engine
    app = create_app(parse_hcp(data))
    engine = start_engine(tmp_path, port)
    try:
        with ServerThread(app) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            first = client.chat.completions.create(model="molt", messages=[CODE_Q])
            history = [CODE_Q, {"role": "assistant", "content": first.choices[0].message.content}]
            assert history[1]["content"] == CODE_A
            before = asyncio.run(app.state.service.store.get(fingerprint(history)))
            assert [t.label for t in before.turns] == ["coding"]
            turn = [*history, {"role": "user", "content": "Tell me a long story."}]
            stream = client.chat.completions.create(model="chat", messages=turn, stream=True)
            received = 0
            with pytest.raises(openai.APIError):
                for chunk in stream:
                    received += 1
                    if received == 2:
                        engine.send_signal(signal.SIGKILL)
                        engine.wait(30)
            assert received >= 2
            assert asyncio.run(app.state.service.store.get(fingerprint(history))) is before  # untouched
            assert len(app.state.service.store) == 1  # the broken turn was never stored
            with pytest.raises(openai.APIStatusError, match="engine unreachable") as error:
                client.chat.completions.create(model="chat", messages=turn)
            assert error.value.status_code == 503  # a dead engine: unavailable, retry later
            engine = start_engine(tmp_path, port)
            again = client.chat.completions.create(model="chat", messages=turn, max_tokens=8)
            assert again.model_extra["molt"]["specialist"] == "chat"
            after = asyncio.run(app.state.service.store.get(fingerprint([*turn, again.choices[0].message.model_dump(exclude_none=True)])))
            assert [t.label for t in after.turns] == ["coding", "chat"]
    finally:
        engine.kill()
        engine.wait(30)
