"""A MinT server serves only the bases it names and caps what one client can ask of it: LoRA
rank, runs, sampling sessions, samples and datums per request, operations queued on a base.
Each refusal names the limit; nothing is loaded or converted for a refused base.
Run: pytest tests/mint/test_server_limits.py"""

import threading

import httpx
import pytest

from molt.http_server import ServerThread
from molt.mint import ModelInput, SamplingParams
from molt.mint.clients import ServiceClient
from molt.mint.operations import CreateSamplerRequest, SampleRequest
from molt.mint.server import create_app
from molt.mint.service import BusyError, LimitError, LocalService, MintLimits
from test_backend import datum

LIMITS = MintLimits(bases=("tiny",), max_rank=8, max_runs=1, max_samplers=1, max_samples=4, max_data=2, max_queued=1)


def test_bases_rank_runs_samples_and_data_are_capped():
    client = ServiceClient()
    client.transport = LocalService(limits=LIMITS)
    with pytest.raises(LimitError, match="base 'embedded' is not served here"):
        client.create_lora_training_client("embedded", rank=4)
    with pytest.raises(LimitError, match="base '/some/folder' is not served here"):
        client.create_lora_training_client("/some/folder", rank=4)
    with pytest.raises(LimitError, match="rank 16 is over this server's limit of 8"):
        client.create_lora_training_client("tiny", rank=16)
    training = client.create_lora_training_client("tiny", rank=8)
    with pytest.raises(LimitError, match="1 training runs, its limit"):
        client.create_lora_training_client("tiny", rank=8)
    with pytest.raises(LimitError, match="3 datums in one request"):
        training.forward_backward([datum("cross_entropy")] * 3, "cross_entropy")
    sampler = client.create_sampling_client(base_model="tiny")
    with pytest.raises(LimitError, match="num_samples 5"):
        sampler.sample(ModelInput.from_ints([1, 2, 3]), 5, SamplingParams(max_tokens=2))
    with pytest.raises(LimitError, match="sampling sessions, its limit"):
        client.create_sampling_client(base_model="tiny")


def test_a_full_queue_is_busy_and_clears_when_the_work_is_done():
    service = LocalService(limits=LIMITS)
    session_id = service.create_sampler(CreateSamplerRequest(base_model="tiny"))
    worker = service._samplers[session_id].worker
    release = threading.Event()
    blocked = worker.submit(release.wait)
    request = SampleRequest(sampling_session_id=session_id, prompt=ModelInput.from_ints([1, 2]), num_samples=1, sampling_params=SamplingParams(max_tokens=1))
    with pytest.raises(BusyError, match="retry once some finish"):
        service.submit("sample", request)
    release.set()
    blocked.result(timeout=30)
    assert len(service.submit("sample", request).result(timeout=60).sequences) == 1


def test_over_http_limits_are_400_and_a_busy_base_is_429():
    service = LocalService(limits=LIMITS)
    with ServerThread(create_app(service)) as url:
        refused = httpx.post(f"{url}/api/v1/create_model", json={"session_id": "s", "base_model": "embedded", "lora_config": {"rank": 4}})
        assert refused.status_code == 400 and "not served here" in refused.json()["detail"]
        session = httpx.post(f"{url}/api/v1/create_sampling_session", json={"session_id": "s", "base_model": "tiny"}).json()["sampling_session_id"]
        release = threading.Event()
        service._samplers[session].worker.submit(release.wait)
        body = {"sampling_session_id": session, "prompt": {"chunks": [{"tokens": [1, 2]}]}, "num_samples": 1, "sampling_params": {"max_tokens": 1}}
        busy = httpx.post(f"{url}/api/v1/asample", json=body)
        release.set()
    assert busy.status_code == 429 and busy.json()["error_type"] == "BusyError"
