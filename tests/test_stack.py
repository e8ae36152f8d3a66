"""``molt up``'s pieces: the HCP pointed at the local engine, the adapters it loads, the chat page.
Run: pytest tests/test_stack.py"""

from fastapi.testclient import TestClient

from molt.hcp import load_hcp, parse_hcp
from molt.stack import engine_config, proxy_with_page, stack_hcp


def test_the_stack_points_the_proxy_at_its_own_engine_and_loads_the_specialists():
    hcp = stack_hcp(load_hcp(), 9123)
    assert hcp.model.engine_url == "http://127.0.0.1:9123/v1" and load_hcp().model.engine_url != hcp.model.engine_url
    assert engine_config(hcp).lora_modules == {}  # the shipped HCP has no trained specialists yet
    data = hcp.model_dump(exclude_none=True)
    data["specialists"][2].update(adapter="coding", revision="molt://run-1/coding")
    assert engine_config(parse_hcp(data)).lora_modules == {"coding": "molt://run-1/coding"}


def test_the_chat_page_is_served_at_the_root():
    with TestClient(proxy_with_page(load_hcp())) as client:
        page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "/v1/chat/completions" in page.text and "body.molt.specialist" in page.text
