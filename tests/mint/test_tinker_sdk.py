"""The unmodified ``tinker`` SDK (pinned in the dev extra) trains and samples against
``molt mint serve``'s app on the tiny model: only base_url and api_key change.
Run: pytest tests/mint/test_tinker_sdk.py"""

import os

import pytest
import torch

os.environ.setdefault("TINKER_TELEMETRY", "0")
tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402

from molt.http_server import ServerThread  # noqa: E402
from molt.mint.server import create_app  # noqa: E402
from molt.mint.service import LocalService, MintLimits  # noqa: E402

KEY = "tml-molt-test"


@pytest.fixture(scope="module")
def local():
    return LocalService(limits=MintLimits(bases=("tiny",)))


@pytest.fixture(scope="module")
def url(local):
    with ServerThread(create_app(local, token=KEY)) as url:
        yield url


@pytest.fixture(scope="module")
def service(url):
    with tinker.ServiceClient(base_url=url, api_key=KEY) as client:  # closing stops its heartbeat thread
        yield client


def datum(tokens=(1, 2, 3, 4, 5), weights=None) -> types.Datum:
    tokens = list(tokens)
    return types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights or [1.0] * (len(tokens) - 1)},
    )


def test_sft_steps_lower_the_loss_and_the_tokenizer_loads_locally(service):
    served = service.get_server_capabilities().supported_models
    assert [(m.model_name, m.trainable, m.sampleable) for m in served] == [("tiny", True, True)]
    training = service.create_lora_training_client(base_model="tiny", rank=4, seed=0).result()
    assert training.get_info().model_data.model_name == "tiny"
    assert training.get_tokenizer().encode("hello")
    losses = []
    for _ in range(6):
        step = training.forward_backward([datum(), datum((7, 8, 9))], "cross_entropy")
        training.optim_step(types.AdamParams(learning_rate=2e-2))
        losses.append(step.result().metrics["loss:sum"])
    assert losses[-1] < 0.7 * losses[0]


def test_an_importance_sampling_step_on_samples_from_saved_weights(service):
    training = service.create_lora_training_client(base_model="tiny", rank=4, seed=1).result()
    sampler = training.save_weights_and_get_sampling_client().result()
    prompt = [1, 2, 3]
    result = sampler.sample(types.ModelInput.from_ints(prompt), 4, types.SamplingParams(max_tokens=4, temperature=1.0, seed=3)).result()
    assert len(result.sequences) == 4 and all(len(s.tokens) == 4 and len(s.logprobs) == 4 for s in result.sequences)
    data = []
    for i, seq in enumerate(result.sequences):
        tokens = prompt + seq.tokens
        n = len(tokens) - 1
        advantages = [0.0] * (len(prompt) - 1) + [1.0 if i % 2 else -1.0] * len(seq.tokens)
        logprobs = [0.0] * (len(prompt) - 1) + list(seq.logprobs)
        data.append(types.Datum(
            model_input=types.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={"target_tokens": tokens[1:], "logprobs": logprobs, "advantages": advantages[:n]},
        ))  # fmt: skip
    out = training.forward_backward(data, "importance_sampling").result()
    # the learner's logprobs of the sampled tokens are the sampler's (same weights, float32)
    learner = torch.tensor(out.loss_fn_outputs[0]["logprobs"].data[len(prompt) - 1 :])
    assert torch.allclose(learner, torch.tensor(result.sequences[0].logprobs), atol=1e-4)
    assert training.optim_step(types.AdamParams(learning_rate=1e-2)).result() is not None


def test_save_state_and_resume_into_a_new_client_with_equal_weights(service):
    training = service.create_lora_training_client(base_model="tiny", rank=4, seed=2).result()
    for _ in range(2):
        training.forward_backward([datum()], "cross_entropy")
        training.optim_step(types.AdamParams(learning_rate=1e-2))
    path = training.save_state("resume-me").result().path
    assert path.startswith("tinker://") and "/weights/" in path
    resumed = service.create_training_client_from_state_with_optimizer(path).result()
    probe = [datum((4, 3, 2, 1))]
    before = training.forward(probe, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
    after = resumed.forward(probe, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data
    assert after == pytest.approx(before, abs=1e-6)
    # one more identical step on each: equal again (the optimizer moments came back too)
    for client in (training, resumed):
        client.forward_backward([datum()], "cross_entropy")
        client.optim_step(types.AdamParams(learning_rate=1e-2))
    again = [c.forward(probe, "cross_entropy").result().loss_fn_outputs[0]["logprobs"].data for c in (training, resumed)]
    assert again[1] == pytest.approx(again[0], abs=1e-5)


def test_sampling_from_weights_saved_for_the_sampler_and_listing(service, url):
    training = service.create_lora_training_client(base_model="tiny", rank=4, seed=3).result()
    path = training.save_weights_for_sampler("for-sampling").result().path
    sampler = service.create_sampling_client(model_path=path).result()
    greedy = types.SamplingParams(max_tokens=3, temperature=0.0)
    first = sampler.sample(types.ModelInput.from_ints([5, 6]), 1, greedy).result().sequences[0].tokens
    assert first == sampler.sample(types.ModelInput.from_ints([5, 6]), 1, greedy).result().sequences[0].tokens
    logprobs = sampler.compute_logprobs(types.ModelInput.from_ints([5, 6, 7])).result()
    assert logprobs[0] is None and all(lp < 0 for lp in logprobs[1:])
    rest = tinker.RestClient(base_url=url, api_key=KEY)
    assert training.model_id in {r.training_run_id for r in rest.list_training_runs().result().training_runs}
    assert path in {c.tinker_path for c in rest.list_checkpoints(training.model_id).result().checkpoints}
    info = rest.get_weights_info_by_tinker_path(path).result()
    assert info.base_model == "tiny" and info.lora_rank == 4


def test_unsupported_requests_and_a_wrong_key_fail_clearly(service, url):
    training = service.create_lora_training_client(base_model="tiny", rank=4).result()
    with pytest.raises(tinker.BadRequestError, match="unknown loss_fn 'gspo'"):
        training.forward_backward([datum()], "gspo").result()
    with pytest.raises(tinker.BadRequestError, match="top-k logprobs"):
        sampler = service.create_sampling_client(base_model="tiny").result()
        sampler.sample(types.ModelInput.from_ints([1, 2]), 1, types.SamplingParams(max_tokens=2), include_prompt_logprobs=True, topk_prompt_logprobs=2).result()
    with pytest.raises(tinker.BadRequestError, match="not served"):
        service.create_lora_training_client(base_model="embedded", rank=4).result()
    with tinker.ServiceClient(base_url=url, api_key="tml-wrong") as stranger, pytest.raises(tinker.AuthenticationError):
        stranger.create_lora_training_client(base_model="tiny", rank=4).result()


def test_a_repeated_seq_id_is_applied_once(service, url):
    """A client retry (same run, same seq_id) gets the first request's id: one optimizer step."""
    import httpx

    training = service.create_lora_training_client(base_model="tiny", rank=4).result()
    training.forward_backward([datum()], "cross_entropy").result()
    body = {"model_id": training.model_id, "seq_id": 2, "adam_params": {"learning_rate": 1e-2}}
    headers = {"x-api-key": KEY}
    first = httpx.post(f"{url}/api/v1/optim_step", json=body, headers=headers).json()["request_id"]
    again = httpx.post(f"{url}/api/v1/optim_step", json=body, headers=headers).json()["request_id"]
    assert first == again
    result = httpx.post(f"{url}/api/v1/retrieve_future", json={"request_id": first}, headers=headers, timeout=60).json()
    assert result["metrics"]["step"] == 1.0
    third = httpx.post(f"{url}/api/v1/optim_step", json=body | {"seq_id": 3}, headers=headers).json()["request_id"]
    assert httpx.post(f"{url}/api/v1/retrieve_future", json={"request_id": third}, headers=headers, timeout=60).json()["metrics"]["step"] == 2.0


def test_a_cancelled_sample_that_has_not_started_never_runs(service, url, local):
    """cancel_future (the SDK sends it for an abandoned sample) drops a sample still queued."""
    import threading

    import httpx

    sampler = service.create_sampling_client(base_model="tiny").result()
    assert httpx.post(f"{url}/api/v1/client/dynamic_config", headers={"x-api-key": KEY}).json()["sample_cancel_enabled"]
    gate = threading.Event()
    local.sampler(sampler._sampling_session_id).worker.submit(gate.wait)  # the sampler is busy
    body = {"sampling_session_id": sampler._sampling_session_id, "num_samples": 1, "prompt": {"chunks": [{"type": "encoded_text", "tokens": [1, 2]}]}, "sampling_params": {"max_tokens": 2}}
    headers = {"x-api-key": KEY}
    kept, dropped = (httpx.post(f"{url}/api/v1/asample", json=body, headers=headers).json()["request_id"] for _ in range(2))
    assert httpx.post(f"{url}/api/v1/cancel_future", json={"request_id": dropped}, headers=headers).status_code == 200
    gate.set()
    retrieve = lambda rid: httpx.post(f"{url}/api/v1/retrieve_future", json={"request_id": rid}, headers=headers, timeout=60)  # noqa: E731
    assert retrieve(kept).headers["content-type"] == "application/x-protobuf"
    assert retrieve(dropped).json()["error"] == "cancelled by the client before it ran"
    assert httpx.post(f"{url}/api/v1/cancel_future", json={"request_id": "req-none"}, headers=headers).status_code == 404


def test_the_cookbook_style_rl_loop_example_runs_unchanged(url):
    """examples/tinker_rl_loop.py (the README's command) knows only the SDK and TINKER_BASE_URL."""
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).parents[2] / "examples" / "tinker_rl_loop.py"
    env = os.environ | {"TINKER_BASE_URL": url, "TINKER_API_KEY": KEY, "TINKER_TELEMETRY": "0"}
    args = ["--base-model", "tiny", "--steps", "2", "--batch", "2", "--group-size", "2", "--held-out", "2", "--rank", "4"]
    run = subprocess.run([sys.executable, str(example), *args], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0].startswith("held-out accuracy before:") and lines[-2].startswith("held-out accuracy after:")
    assert [line.split()[1] for line in lines if line.startswith("step")] == ["1/2", "2/2"]
    assert lines[-1].startswith("final weights: tinker://")
