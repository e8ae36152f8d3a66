"""The HTTP surface of ``molt mint serve`` beyond what the shared client suite covers: error
shapes, unknown ids, long-poll futures, and the bf16 service.
Run: pytest tests/mint/test_http.py"""

import httpx
import pytest

from molt.http_server import ServerThread
from molt.mint import AdamParams
from molt.mint.clients import ServiceClient
from molt.mint.operations import ComputeLogprobsRequest
from molt.mint.server import create_app
from molt.mint.service import LocalService, UnknownIdError
from test_backend import datum


@pytest.fixture(scope="module")
def url():
    with ServerThread(create_app(LocalService(dtype="bfloat16"))) as url:
        yield url


def test_errors_are_json_with_a_type_and_status(url):
    with httpx.Client(base_url=url) as http:
        bad = http.post("/api/v1/forward_backward", json={"model_id": "x", "data": "not a list", "loss_fn": "cross_entropy"})
        assert bad.status_code == 400 and "protobuf" in bad.json()["detail"]
        garbage = http.post("/api/v1/forward_backward", content=b"\xff\xff", headers={"content-type": "application/x-protobuf"})
        assert garbage.status_code == 400 and "ForwardBackwardRequest" in garbage.json()["detail"]
        unknown = http.post("/api/v1/optim_step", json={"model_id": "run-missing", "adam_params": {}})
        assert unknown.status_code == 404 and "run-missing" in unknown.json()["detail"] and unknown.json()["error_type"] == "UnknownIdError"
        assert http.post("/api/v1/retrieve_future", json={"request_id": "req-none"}).status_code == 404
        assert http.post("/api/v1/frobnicate", json={}).status_code == 404
        not_json = http.post("/api/v1/create_model", content=b"{", headers={"content-type": "application/json"})
        assert not_json.status_code == 400
        assert http.get("/health").json() == {"status": "ok"}


def test_bf16_training_over_http_lowers_the_loss_and_futures_poll(url):
    service = ServiceClient(base_url=url)
    client = service.create_lora_training_client("tiny", rank=8, seed=3)
    d = datum("cross_entropy")
    first = client.forward_backward([d], "cross_entropy")
    assert first.result(timeout=60).metrics["loss:sum"] > 0 and first.done()
    client.optim_step(AdamParams(learning_rate=2e-2))
    losses = []
    for _ in range(10):
        losses.append(client.forward_backward([d], "cross_entropy"))
        client.optim_step(AdamParams(learning_rate=2e-2))
    assert losses[-1].result().metrics["loss:sum"] < 0.5 * first.result().metrics["loss:sum"]
    with pytest.raises(ValueError, match="needs model_path or base_model"):
        service.create_sampling_client()
    with pytest.raises(UnknownIdError, match="sampling_session_id 'nope'"):
        service.transport.submit("compute_logprobs", ComputeLogprobsRequest(sampling_session_id="nope", prompt=d.model_input))
