"""``molt bench ray``: what a training step costs through Ray, against the same step in process.

The same steps (``forward_backward`` on a batch, then ``optim_step``) run three ways, in one run:

- **in process**: ``ServiceClient()``, MinT in this process;
- **over HTTP**: ``molt mint serve``'s front with MinT in the same process (the Tinker protocol);
- **over HTTP, on Ray**: the same front with the run in a Ray worker (``--ray``).

The first step of each is a warm-up (the base loads, the worker starts) and is not counted.
"""

import statistics
import time
from dataclasses import asdict, dataclass

from rich.console import Console

from molt.bench.report import print_rows
from molt.http_server import ServerThread
from molt.mint import ServiceClient
from molt.mint.longstraw import LongStraw
from molt.mint.server import create_app
from molt.mint.service import LocalService, MintLimits
from molt.mint.types import AdamParams, Datum, ModelInput

PATHS = ("in process", "over HTTP", "over HTTP, on Ray")


@dataclass(frozen=True)
class RayStepConfig:
    model: str = "embedded"
    steps: int = 8
    batch: int = 8
    tokens: int = 128
    """Tokens per datum."""
    rank: int = 16
    ray: str = "local"
    """The Ray cluster: an address, or ``local`` to start one here."""
    worker_cpus: float | None = None
    """CPUs the worker reserves (and its PyTorch threads); None: as many as this machine has."""


def batch(config: RayStepConfig, step: int) -> list[Datum]:
    rows = [[(step * 31 + i * 7 + j * 3) % 5000 + 10 for j in range(config.tokens + 1)] for i in range(config.batch)]
    return [Datum(model_input=ModelInput.from_ints(r[:-1]), loss_fn_inputs={"target_tokens": r[1:], "weights": [1.0] * config.tokens}) for r in rows]


def step_seconds(client: ServiceClient, config: RayStepConfig) -> list[float]:
    training = client.create_lora_training_client(config.model, rank=config.rank, seed=0)
    seconds = []
    for number in range(config.steps + 1):
        start = time.perf_counter()
        training.forward_backward(batch(config, number), "cross_entropy").result()
        training.optim_step(AdamParams(learning_rate=1e-4)).result()
        seconds.append(time.perf_counter() - start)
    return seconds[1:]  # the first loads the base


def run(config: RayStepConfig, console: Console) -> dict:
    from molt.mint.ray_service import RayService

    measured = {}
    console.print(f"[dim]{config.steps} steps in process ...[/]")
    measured["in process"] = step_seconds(ServiceClient(dtype="float32"), config)
    limits = MintLimits(bases=(config.model,))
    console.print(f"[dim]{config.steps} steps over HTTP ...[/]")
    with ServerThread(create_app(LocalService("float32", limits))) as url:
        measured["over HTTP"] = step_seconds(ServiceClient(base_url=url), config)
    console.print(f"[dim]{config.steps} steps over HTTP on Ray ({config.ray}) ...[/]")
    service = RayService(config.ray, "float32", limits, LongStraw(), config.worker_cpus)
    try:
        with ServerThread(create_app(service)) as url:
            measured["over HTTP, on Ray"] = step_seconds(ServiceClient(base_url=url), config)
    finally:
        service.close()
    medians = {path: statistics.median(seconds) for path, seconds in measured.items()}
    result = {
        "config": asdict(config),
        "median_step_s": medians,
        "ray_vs_in_process": medians["over HTTP, on Ray"] / medians["in process"],
        "ray_vs_http": medians["over HTTP, on Ray"] / medians["over HTTP"],
    }
    print_rows(
        f"one training step ({config.model}, {config.batch} × {config.tokens} tokens, LoRA rank {config.rank}, float32), s",
        ["path", "median", "vs in process"],
        [[path, medians[path], medians[path] / medians["in process"]] for path in PATHS],
        console,
    )
    console.print(f"through Ray: ×{result['ray_vs_in_process']:.3f} the in-process step, ×{result['ray_vs_http']:.3f} the HTTP step without Ray")
    return result
