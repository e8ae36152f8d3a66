"""First start without waiting: the stack serves the shipped HCP at once while the specialists
and the router train on a worker thread; each specialist is loaded into the running engine and
routed to as soon as it is trained, without a restart; /health says what is still training.
On the tiny model with toy recipes, so the whole bootstrap takes seconds.
Run: pytest tests/specialists/test_background.py"""


import httpx
import openai

from molt.families import Recipe
from molt.hcp import load_hcp
from molt.http_server import ServerThread
from molt.models import load_model
from molt.specialists.background import BackgroundBootstrap
from molt.specialists.bootstrap import bootstrapped_path
from molt.stack import engine_thread, proxy_with_page
from toy_sizes import TINY_ROUTER

TOY = {label: Recipe(examples=6, batch_tokens=1024, extras=0) for label in ("chat", "agent", "coding", "genui")}


def test_the_stack_serves_at_once_and_each_specialist_once_trained(tmp_path, monkeypatch):
    monkeypatch.setenv("MOLT_HOME", str(tmp_path))
    shipped = load_hcp()
    shipped = shipped.model_copy(update={"model": shipped.model.model_copy(update={"base": "tiny"})})
    lines: list[str] = []
    with engine_thread(shipped, load_model("tiny")) as served:
        app = proxy_with_page(served)
        with ServerThread(app) as url:
            client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
            worker = BackgroundBootstrap(served, app.state.service, log=lines.append, recipes=TOY, router=TINY_ROUTER).start()
            health = httpx.get(f"{url}/health").json()
            assert set(health["training"]) == {"chat", "agent", "coding", "genui", "router"} and health["training"]["router"] != "ready"
            first = client.chat.completions.create(model="coding", messages=[{"role": "user", "content": "hi"}], max_tokens=4)
            assert first.model_extra["molt"]["specialist"] == "coding"  # answered by the base while training goes on
            assert worker.done.wait(600)
            assert set(httpx.get(f"{url}/health").json()["training"].values()) == {"ready"}, lines
            engine_models = {m["id"] for m in httpx.get(f"{served.model.engine_url}/models").json()["data"]}
            assert {"chat", "agent", "coding", "genui"} <= engine_models  # hot-loaded, no restart
            serving = app.state.service.hcp
            assert {s.label: s.adapter for s in serving.specialists} == {"chat": "chat", "agent": "agent", "coding": "coding", "genui": "genui"}
            assert serving.router.kind == "classifier" and app.state.service.loop.router is not None
            later = client.chat.completions.create(model="molt", messages=[{"role": "user", "content": "Write a Python function that reverses a list."}], max_tokens=4)
            assert later.model_extra["molt"]["specialist"] in {"chat", "agent", "coding", "genui"}
    assert bootstrapped_path(shipped).is_file()
    assert any(line.startswith("training chat") for line in lines) and any("coding is trained and served" in line for line in lines)
    assert any("step" in line and "loss" in line for line in lines)  # progress a piped log shows
