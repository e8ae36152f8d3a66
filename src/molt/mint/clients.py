"""Tinker's client classes: ``ServiceClient`` → ``TrainingClient`` and ``SamplingClient``.

Code written against the Tinker SDK runs here by changing the import. ``ServiceClient()`` trains
in this process; ``ServiceClient(base_url=...)`` talks to ``molt mint serve`` over HTTP with the
same requests. Every call returns an ``APIFuture`` and has an ``_async`` twin; calls on one base
run in submission order.
"""

import threading
from collections.abc import Callable
from concurrent.futures import Future

import torch

from molt import http_api
from molt.mint.futures import APIFuture
from molt.mint.operations import (
    ComputeLogprobsRequest,
    CreateModelRequest,
    CreateSamplerRequest,
    ForwardRequest,
    LoadStateRequest,
    OptimStepRequest,
    SampleRequest,
    SampleResponse,
    SaveRequest,
)
from molt.mint.remote import RemoteService
from molt.mint.routing import ROUTING_INPUTS
from molt.mint.service import LocalService
from molt.mint.types import AdamParams, Datum, ForwardBackwardOutput, LoraConfig, ModelInput, SamplingParams, TensorData
from molt.models import load_tokenizer

CustomLoss = Callable[[list[Datum], list[torch.Tensor]], tuple[torch.Tensor, dict[str, float]]]


class TrainingClient:
    def __init__(self, service: "ServiceClient", model_id: str, base_model: str):
        self._service, self.model_id, self.base_model = service, model_id, base_model

    def get_tokenizer(self):
        return self._service.get_tokenizer(self.base_model)

    def forward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        """Logprobs and loss under the current weights; no gradients."""
        return self._submit("forward", ForwardRequest(model_id=self.model_id, data=data, loss_fn=loss_fn, loss_fn_config=loss_fn_config))

    def forward_backward(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        """Accumulate the gradient of the summed loss; ``optim_step`` applies it."""
        return self._submit("forward_backward", ForwardRequest(model_id=self.model_id, data=data, loss_fn=loss_fn, loss_fn_config=loss_fn_config))

    def forward_backward_custom(self, data: list[Datum], loss_fn: CustomLoss) -> APIFuture[ForwardBackwardOutput]:
        """``loss_fn(data, logprobs) -> (loss, metrics)``, any differentiable function of the logprobs.

        As in Tinker, it runs where the client runs: a forward pass fetches the logprobs, the loss
        and its gradient g = dL/dlogprobs are computed here, and a ``cross_entropy`` backward with
        weights −g sends exactly that gradient into the adapter (d/dθ Σ −w·log p = Σ g·dlog p/dθ).
        Routing inputs (``molt.mint.routing``) travel with both passes, so they are replayed too.
        """
        future: Future = Future()

        def run() -> None:
            try:
                carried = lambda d: {"target_tokens": d.loss_fn_inputs["target_tokens"], **{k: v for k, v in d.loss_fn_inputs.items() if k in ROUTING_INPUTS}}
                scored = [Datum(model_input=d.model_input, loss_fn_inputs={**carried(d), "weights": [0.0] * d.model_input.length}) for d in data]
                logprobs = [o["logprobs"].to_torch().requires_grad_(True) for o in self.forward(scored, "cross_entropy").result().loss_fn_outputs]
                loss, metrics = loss_fn(data, logprobs)
                grads = torch.autograd.grad(loss, logprobs, allow_unused=True)
                linear = [
                    Datum(model_input=d.model_input, loss_fn_inputs={**carried(d), "weights": TensorData.from_torch(-g if g is not None else torch.zeros_like(lp))})
                    for d, g, lp in zip(data, grads, logprobs)
                ]
                out = self.forward_backward(linear, "cross_entropy").result()
                future.set_result(ForwardBackwardOutput(loss_fn_output_type="custom", loss_fn_outputs=out.loss_fn_outputs, metrics={"loss:sum": float(loss.detach()), **metrics}))
            except BaseException as e:
                future.set_exception(e)

        threading.Thread(target=run, daemon=True).start()
        return APIFuture(future)

    def optim_step(self, adam_params: AdamParams) -> APIFuture[dict]:
        return self._submit("optim_step", OptimStepRequest(model_id=self.model_id, adam_params=adam_params))

    def save_weights_for_sampler(self, name: str) -> APIFuture[str]:
        """Write an immutable adapter revision (PEFT format) and return its ``molt://`` path."""
        return self._submit("save_weights_for_sampler", SaveRequest(model_id=self.model_id, name=name))

    def save_state(self, name: str) -> APIFuture[str]:
        """Weights and optimizer state, for resuming; returns a ``molt://<run>/state/<name>`` path."""
        return self._submit("save_state", SaveRequest(model_id=self.model_id, name=name))

    def load_state(self, path: str) -> APIFuture[None]:
        """Weights only; the optimizer starts fresh."""
        return self._submit("load_state", LoadStateRequest(model_id=self.model_id, path=path))

    def load_weights(self, path: str) -> APIFuture[None]:
        """Start from the weights of a saved sampler revision (a PEFT adapter: ``molt://<run>/<name>``,
        or a registry-stored adapter as ``molt://store/<sha256>``); the optimizer starts fresh.
        molt's addition to the Tinker API: RL continues from a specialist that SFT made."""
        return self._submit("load_weights", LoadStateRequest(model_id=self.model_id, path=path))

    def load_state_with_optimizer(self, path: str) -> APIFuture[None]:
        """Weights and optimizer moments: continues exactly where the saved run stopped."""
        return self._submit("load_state", LoadStateRequest(model_id=self.model_id, path=path, with_optimizer=True))

    def save_weights_and_get_sampling_client(self, name: str) -> "SamplingClient":
        path = self.save_weights_for_sampler(name).result()
        return self._service.create_sampling_client(model_path=path, base_model=self.base_model)

    def _submit(self, op: str, request) -> APIFuture:
        return self._service.transport.submit(op, request)

    async def forward_async(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self.forward(data, loss_fn, loss_fn_config)

    async def forward_backward_async(self, data: list[Datum], loss_fn: str, loss_fn_config: dict | None = None) -> APIFuture[ForwardBackwardOutput]:
        return self.forward_backward(data, loss_fn, loss_fn_config)

    async def forward_backward_custom_async(self, data: list[Datum], loss_fn: CustomLoss) -> APIFuture[ForwardBackwardOutput]:
        return self.forward_backward_custom(data, loss_fn)

    async def optim_step_async(self, adam_params: AdamParams) -> APIFuture[dict]:
        return self.optim_step(adam_params)

    async def save_weights_for_sampler_async(self, name: str) -> APIFuture[str]:
        return self.save_weights_for_sampler(name)

    async def save_state_async(self, name: str) -> APIFuture[str]:
        return self.save_state(name)


class SamplingClient:
    def __init__(self, service: "ServiceClient", session_id: str):
        self._service, self.session_id = service, session_id

    def sample(self, prompt: ModelInput, num_samples: int, sampling_params: SamplingParams, include_prompt_logprobs: bool = False) -> APIFuture[SampleResponse]:
        request = SampleRequest(sampling_session_id=self.session_id, prompt=prompt, num_samples=num_samples, sampling_params=sampling_params, include_prompt_logprobs=include_prompt_logprobs)
        return self._service.transport.submit("sample", request)

    async def sample_async(self, prompt: ModelInput, num_samples: int, sampling_params: SamplingParams, include_prompt_logprobs: bool = False) -> SampleResponse:
        return await self.sample(prompt, num_samples, sampling_params, include_prompt_logprobs).result_async()

    def compute_logprobs(self, prompt: ModelInput) -> APIFuture[list[float | None]]:
        """Logprob of each token of ``prompt`` given those before it (None for the first)."""
        return self._service.transport.submit("compute_logprobs", ComputeLogprobsRequest(sampling_session_id=self.session_id, prompt=prompt))

    async def compute_logprobs_async(self, prompt: ModelInput) -> list[float | None]:
        return await self.compute_logprobs(prompt).result_async()


class ServiceClient:
    """Entry point. In-process by default (``dtype``: float32, bfloat16 or auto); with
    ``base_url`` every call goes to a ``molt mint serve`` server, which owns the dtype."""

    def __init__(self, base_url: str | None = None, *, dtype: str = "float32", api_timeout: float = 600.0, api_key: str | None = None):
        """``api_key``: the server's bearer token (default ``$MOLT_API_KEY``)."""
        self.transport: LocalService | RemoteService = RemoteService(base_url, api_timeout, http_api.api_key(api_key)) if base_url else LocalService(dtype)
        self._tokenizers: dict[str, object] = {}

    def create_lora_training_client(
        self, base_model: str, rank: int = 32, seed: int | None = None,
        train_mlp: bool = True, train_attn: bool = True, train_unembed: bool = True,
    ) -> TrainingClient:
        config = LoraConfig(rank=rank, seed=seed, train_mlp=train_mlp, train_attn=train_attn, train_unembed=train_unembed)
        model_id = self.transport.create_model(CreateModelRequest(base_model=base_model, lora_config=config))
        return TrainingClient(self, model_id, base_model)

    def create_sampling_client(self, model_path: str | None = None, base_model: str | None = None) -> SamplingClient:
        """Sample a saved revision (``model_path``, a molt:// path) or the bare ``base_model``."""
        return SamplingClient(self, self.transport.create_sampler(CreateSamplerRequest(model_path=model_path, base_model=base_model)))

    def get_tokenizer(self, base_model: str):
        if base_model not in self._tokenizers:
            self._tokenizers[base_model] = load_tokenizer(base_model)
        return self._tokenizers[base_model]

    async def create_lora_training_client_async(self, base_model: str, **kwargs) -> TrainingClient:
        return self.create_lora_training_client(base_model, **kwargs)

    async def create_sampling_client_async(self, model_path: str | None = None, base_model: str | None = None) -> SamplingClient:
        return self.create_sampling_client(model_path, base_model)
