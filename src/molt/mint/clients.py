"""Tinker's client classes over the local backend: ``ServiceClient`` → ``TrainingClient``.

Code written against the Tinker SDK runs here by changing the import. Every call returns an
``APIFuture`` and has an ``_async`` twin; calls on one base run in submission order.
"""

import uuid

from molt.mint import checkpoints
from molt.mint.backend import LocalBackend, Policy
from molt.mint.futures import APIFuture, OrderedWorker
from molt.mint.types import AdamParams, Datum, ForwardBackwardOutput, LoraConfig

class TrainingClient:
    def __init__(self, backend: LocalBackend, policy: Policy, worker: OrderedWorker):
        self.backend, self.policy, self._worker = backend, policy, worker

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
        return TrainingClient(backend, policy, worker)

    async def create_lora_training_client_async(self, base_model: str, **kwargs) -> TrainingClient:
        return self.create_lora_training_client(base_model, **kwargs)
