"""Killing ``molt mint serve`` mid-step and starting it again: the SDK's pending step fails with
an error that says the server restarted (runs live in memory), never hangs, and resuming from
the last saved state continues with exactly one optimizer step per optim_step call."""

import os
import signal
import subprocess
import time

import pytest

os.environ.setdefault("TINKER_TELEMETRY", "0")
tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402

from molt_processes import free_port, start_mint  # noqa: E402

KEY = "tml-molt-restart"


def serve(port: int) -> subprocess.Popen:
    return start_mint(port, "--api-key", KEY)


def datum(tokens) -> types.Datum:
    return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})


def test_a_step_cut_by_a_restart_fails_clearly_and_the_run_resumes_once(molt_home):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server = serve(port)
    try:
        with tinker.ServiceClient(base_url=url, api_key=KEY) as service:
            training = service.create_lora_training_client(base_model="tiny", rank=4, seed=0).result()
            training.forward_backward([datum([1, 2, 3, 4, 5])], "cross_entropy").result()
            assert training.optim_step(types.AdamParams(learning_rate=1e-2)).result().metrics["step"] == 1.0
            saved = training.save_state("before-kill").result().path

            batch = [datum(list(range(1, 200)))] * 64  # a step long enough to be cut
            step = training.forward_backward(batch, "cross_entropy")
            update = training.optim_step(types.AdamParams(learning_rate=1e-2))
            time.sleep(0.3)
            server.send_signal(signal.SIGKILL)
            server.wait()
            server = serve(port)

            for pending in (step, update):
                with pytest.raises((ValueError, tinker.NotFoundError), match="restarted since") as failed:
                    pending.result(timeout=120)
                print(type(failed.value).__name__, failed.value)

            resumed = service.create_training_client_from_state_with_optimizer(saved).result()
            resumed.forward_backward([datum([1, 2, 3, 4, 5])], "cross_entropy").result()
            assert resumed.optim_step(types.AdamParams(learning_rate=1e-2)).result().metrics["step"] == 2.0
    finally:
        server.kill()
        server.wait()
