"""Tinker's client classes over the local backend: ``ServiceClient`` → ``TrainingClient``.

Code written against the Tinker SDK runs here by changing the import. Every call returns an
``APIFuture`` and has an ``_async`` twin; calls on one base run in submission order.
"""

import json
import uuid

from molt.mint import checkpoints
from molt.mint.checkpoints import CheckpointError, resolve
from molt.mint.sampling import SamplingClient, SamplingEngines
from molt.mint.backend import LocalBackend, Policy
from molt.mint.futures import APIFuture, OrderedWorker
from molt.mint.types import AdamParams, Datum, ForwardBackwardOutput, LoraConfig

class TrainingClient:
    def __init__(self, service: "ServiceClient", backend: LocalBackend, policy: Policy, worker: OrderedWorker):
        self._service, self.backend, self.policy, self._worker = service, backend, policy, worker

    @property
    def model_id(self) -> str:
        return self.policy.name

    def get_tokenizer(self):
        return self.backend.tokenizer

    def forward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self._worker.submit(self.backend.forward_backward, self.policy, data, loss_fn, loss_fn_config, False)

    def forward_backward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self._worker.submit(self.backend.forward_backward, self.policy, data, loss_fn, loss_fn_config)

    def forward_backward_custom(self, data: list[Datum], loss_fn) -> APIFuture[ForwardBackwardOutput]:
        return self._worker.submit(self.backend.forward_backward_custom, self.policy, data, loss_fn)

    def optim_step(self, adam_params: AdamParams) -> APIFuture[dict]:
        return self._worker.submit(self.backend.optim_step, self.policy, adam_params)

    def save_weights_for_sampler(self, name: str) -> APIFuture[str]:
        """Write an immutable adapter revision (PEFT format) and return its ``molt://`` path."""
        return self._worker.submit(self._locked, checkpoints.save_sampler_weights, self.backend.base_model, self.policy.name, name)

    def save_state(self, name: str) -> APIFuture[str]:
        """Weights and optimizer state, for resuming; returns a ``molt://<run>/state/<name>`` path."""
        return self._worker.submit(self._locked, checkpoints.save_state, self.policy.name, name)

    def load_state(self, path: str) -> APIFuture[None]:
        """Weights only; the optimizer starts fresh."""
        return self._worker.submit(self._locked, checkpoints.load_state, path, False)

    def load_state_with_optimizer(self, path: str) -> APIFuture[None]:
        """Weights and optimizer moments: continues exactly where the saved run stopped."""
        return self._worker.submit(self._locked, checkpoints.load_state, path, True)

    def save_weights_and_get_sampling_client(self, name: str) -> "SamplingClient":
        path = self.save_weights_for_sampler(name).result()
        return self._service.create_sampling_client(model_path=path, base_model=self.backend.base_model)

    def _locked(self, fn, *args):
        with self.backend.lock:
            return fn(self.backend.model, self.policy, *args)

    async def forward_async(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self.forward(data, loss_fn, loss_fn_config)

    async def forward_backward_async(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self.forward_backward(data, loss_fn, loss_fn_config)

    async def optim_step_async(self, adam_params: AdamParams) -> APIFuture[dict]:
        return self.optim_step(adam_params)


class ServiceClient:
    """Entry point. One resident base per base-model name, shared by every training client."""

    def __init__(self):
        self._backends: dict[str, tuple[LocalBackend, OrderedWorker]] = {}
        self._sampling = SamplingEngines()

    def _backend(self, base_model: str) -> tuple[LocalBackend, OrderedWorker]:
        if base_model not in self._backends:
            self._backends[base_model] = (LocalBackend(base_model), OrderedWorker(f"mint-{base_model}"))
        return self._backends[base_model]

    def create_lora_training_client(
        self, base_model: str, rank: int = 32, seed: int | None = None,
        train_mlp: bool = True, train_attn: bool = True, train_unembed: bool = True,
    ) -> TrainingClient:
        config = LoraConfig(rank=rank, seed=seed, train_mlp=train_mlp, train_attn=train_attn, train_unembed=train_unembed)
        backend, worker = self._backend(base_model)
        policy = backend.create_policy(f"run-{uuid.uuid4().hex[:12]}", config)
        return TrainingClient(self, backend, policy, worker)

    def create_sampling_client(self, model_path: str | None = None, base_model: str | None = None) -> SamplingClient:
        """Sample a saved revision (``model_path``, a molt:// path) or the bare ``base_model``."""
        if base_model is None:
            if model_path is None:
                raise ValueError("create_sampling_client needs model_path or base_model")
            base_model = self._base_of(model_path)
        return self._sampling.client(base_model, model_path)

    def _base_of(self, model_path: str) -> str:
        config = resolve(model_path) / "adapter_config.json"
        if not config.is_file():
            raise CheckpointError(f"no sampler revision at {model_path}")
        return json.loads(config.read_text())["base_model_name_or_path"]

    async def create_lora_training_client_async(self, base_model: str, **kwargs) -> TrainingClient:
        return self.create_lora_training_client(base_model, **kwargs)
