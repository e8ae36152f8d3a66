"""What ``molt rl`` sets up around the loop: the environment's datasets under the HCP, a MinT
training client (in this process or a ``molt mint serve`` server) and a sampling engine (one
started in this process, or any OpenAI-compatible server already running)."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

from molt.engine.config import EngineConfig
from molt.families.base import Split
from molt.engine.server import create_app
from molt.forge.catalog import ENVS
from molt.forge.loop import RLConfig, Run
from molt.forge.sampler import EngineSampler
from molt.hcp.contract import HCP
from molt.home import molt_home
from molt.http_server import ServerThread
from molt.mint import ServiceClient
from molt.models import load_model
from molt.models.loader import load_tokenizer
from molt.models.renderer import get_renderer


HELDOUT_SEED = 0
"""Held-out problems do not depend on the run's seed, so runs with other seeds are scored on the same set."""


@contextlib.contextmanager
def rl_run(
    config: RLConfig, env: str, hcp: HCP, base: str = "embedded", rank: int = 16, train_size: int = 200, heldout_size: int = 30,
    engine_url: str | None = None, mint_url: str | None = None, dtype: str = "float32", folder: Path | None = None, start: str | None = None,
    train_split: Split | None = None, monitor_split: Split = "heldout",
) -> Iterator[Run]:
    """A ready ``Run``; an engine started here stops when the block ends. ``start``: the revision
    (a ``molt://`` path) whose weights the policy starts from; None: a fresh LoRA on the base.
    ``train_split``: the family split trained on (default: the environment's); ``monitor_split``:
    the split of the problems scored greedily before and after (``molt evolve`` keeps its loop off
    the held-out split and watches ``wording``)."""
    if env not in ENVS:
        raise ValueError(f"unknown environment {env!r}; molt has: {', '.join(ENVS)}")
    spec = ENVS[env]
    renderer = get_renderer(load_tokenizer(base))
    train = spec.dataset(train_split or spec.train_split, train_size, hcp, spec.label, renderer, config.seed)
    heldout = spec.dataset(monitor_split, heldout_size, hcp, spec.label, renderer, HELDOUT_SEED).problems()  # the same for every run seed
    training = ServiceClient(mint_url, dtype=dtype).create_lora_training_client(base, rank=rank, seed=config.seed)
    if start is not None:
        training.load_weights(start).result()
    folder = folder or molt_home() / "rl" / f"{env}-{config.adapter}"
    with contextlib.ExitStack() as stack:
        if engine_url is None:
            engine = EngineConfig(model=base, dtype=dtype, max_num_seqs=max(16, config.batch * config.group_size))
            engine_url = stack.enter_context(ServerThread(create_app(engine, load_model(base)))) + "/v1"
        sampler = EngineSampler(engine_url, routing=config.routing_replay)
        stack.callback(sampler.close)
        yield Run(config, train, heldout, training, sampler, folder)
