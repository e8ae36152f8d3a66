"""MinT on a local Ray cluster (``molt mint serve --ray``): runs train in a Ray actor per base with
their LoRA sessions multiplexed on it, behind the same Tinker HTTP front; a worker killed
mid-session is replaced, the run resumes from its last saved state, the client is told, and
repeating the lost step gives exactly the weights of a run that never lost it.
Run: make test-scale (or pytest -m scale tests/mint/test_ray.py)."""

import pytest

from molt.http_server import ServerThread
from molt.mint import ServiceClient
from molt.mint.longstraw import LongStraw
from molt.mint.ray_service import RayService  # imports Ray only when a service starts
from molt.mint.server import create_app
from molt.mint.service import MintLimits
from molt.mint.types import AdamParams, Datum, ModelInput

pytestmark = pytest.mark.scale  # `make test` leaves these out; `make test-scale` installs Ray and runs them


@pytest.fixture(scope="module")
def cluster():
    """A Ray cluster started here (two CPUs), MinT's HTTP front on it: (service, url)."""
    service = RayService("local", "float32", MintLimits(bases=("tiny",)), LongStraw(), cpus_per_worker=1)
    try:
        with ServerThread(create_app(service)) as url:
            yield service, url
    finally:
        service.close()


def datum(step: int) -> Datum:
    tokens = [(step * 5 + j * 3) % 90 + 1 for j in range(10)]
    return Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * 9})


def step(training, number: int) -> float:
    training.forward_backward([datum(number)], "cross_entropy").result()
    return training.optim_step(AdamParams(learning_rate=5e-2)).result()["step"]


def probe(training):
    return training.forward([datum(99)], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch()


def test_runs_on_one_base_share_one_worker(cluster):
    service, url = cluster
    client = ServiceClient(base_url=url)
    first, second = (client.create_lora_training_client("tiny", rank=4, seed=s) for s in (0, 1))
    assert step(first, 0) == 1.0 and step(second, 0) == 1.0  # separate LoRA sessions, separate optimizers
    assert service.worker_pid(first.model_id) == service.worker_pid(second.model_id)
    assert len(service._workers) == 1
    assert not (probe(first) == probe(second)).all()  # different seeds, different weights


def test_a_killed_worker_is_replaced_and_the_run_resumes_from_its_saved_state(cluster):
    service, url = cluster
    client = ServiceClient(base_url=url)
    steady = client.create_lora_training_client("tiny", rank=4, seed=7)
    for number in range(3):
        step(steady, number)
    expected = probe(steady)  # three steps, never interrupted

    training = client.create_lora_training_client("tiny", rank=4, seed=7)
    assert [step(training, 0), step(training, 1)] == [1.0, 2.0]
    training.save_state("after-2").result()
    training.forward_backward([datum(2)], "cross_entropy").result()
    before = service.worker_pid(training.model_id)
    worker = service._workers["tiny"]
    service.ray.kill(worker.handle, no_restart=False)  # the worker dies mid-session
    while service._replacement(worker) == worker.incarnation:  # the kill lands, Ray starts a new one
        pass
    with pytest.raises(RuntimeError, match=r"died and was replaced: run .* resumed from its last saved state .*after-2 \(step 2\)"):
        training.optim_step(AdamParams(learning_rate=5e-2)).result()
    assert service.worker_pid(training.model_id) != before  # a new process holds the run
    assert step(training, 2) == 3.0  # the client repeats the step since the saved state
    assert (probe(training) == expected).all()  # as if the worker had never died


def test_molt_mint_serve_on_ray_speaks_tinker(tmp_path):
    """`molt mint serve --ray local` as its own process: the official tinker SDK trains there."""
    import os

    from molt_processes import free_port, start_mint

    os.environ.setdefault("TINKER_TELEMETRY", "0")
    import tinker
    port = free_port()
    server = start_mint(port, "--ray", "local", "--api-key", "tml-molt-ray")
    try:
        with tinker.ServiceClient(base_url=f"http://127.0.0.1:{port}", api_key="tml-molt-ray") as service:
            training = service.create_lora_training_client(base_model="tiny", rank=4, seed=0).result()
            tokens = list(range(1, 12))
            data = [tinker.types.Datum(model_input=tinker.types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * 10})]
            training.forward_backward(data, "cross_entropy").result()
            assert training.optim_step(tinker.types.AdamParams(learning_rate=1e-2)).result().metrics["step"] == 1.0
    finally:
        server.terminate()
        server.wait(timeout=60)


def test_bench_ray_measures_every_path(cluster):
    """`molt bench ray` at toy size (last here: it shuts Ray down when done)."""
    import io

    from rich.console import Console

    from molt.bench.ray_step import PATHS, RayStepConfig, run

    out = io.StringIO()
    config = RayStepConfig(model="tiny", steps=2, batch=2, tokens=8, rank=4, worker_cpus=0.5)  # the fixture's worker holds a CPU
    result = run(config, Console(file=out, width=150))
    assert set(result["median_step_s"]) == set(PATHS) and all(v > 0 for v in result["median_step_s"].values())
    assert f"×{result['ray_vs_in_process']:.3f}" in out.getvalue()
