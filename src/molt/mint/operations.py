"""Every asynchronous MinT operation as a typed request and its result type.

The same request objects drive the in-process service and cross HTTP as JSON (``molt mint
serve``), so both transports run one implementation and are tested with one suite.
"""

from typing import Any

from pydantic import BaseModel, Field

from molt.mint.types import AdamParams, Datum, ForwardBackwardOutput, LoraConfig, ModelInput, SamplingParams


class SampledSequence(BaseModel):
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str
    """'stop' (a stop token or string) or 'length'."""


class SampleResponse(BaseModel):
    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None = None


class ForwardRequest(BaseModel):
    model_id: str
    data: list[Datum]
    loss_fn: str
    loss_fn_config: dict[str, float] | None = None


class OptimStepRequest(BaseModel):
    model_id: str
    adam_params: AdamParams


class SaveRequest(BaseModel):
    model_id: str
    name: str = Field(min_length=1)


class LoadStateRequest(BaseModel):
    model_id: str
    path: str
    with_optimizer: bool = False


class SampleRequest(BaseModel):
    sampling_session_id: str
    prompt: ModelInput
    num_samples: int = Field(1, ge=1)
    sampling_params: SamplingParams
    include_prompt_logprobs: bool = False


class ComputeLogprobsRequest(BaseModel):
    sampling_session_id: str
    prompt: ModelInput


REQUESTS: dict[str, type[BaseModel]] = {
    "forward": ForwardRequest,
    "forward_backward": ForwardRequest,
    "optim_step": OptimStepRequest,
    "save_weights_for_sampler": SaveRequest,
    "save_state": SaveRequest,
    "load_state": LoadStateRequest,
    "load_weights": LoadStateRequest,
    "sample": SampleRequest,
    "compute_logprobs": ComputeLogprobsRequest,
}

RESULTS: dict[str, Any] = {
    "forward": ForwardBackwardOutput,
    "forward_backward": ForwardBackwardOutput,
    "optim_step": dict[str, float],
    "save_weights_for_sampler": str,
    "save_state": str,
    "load_state": None,
    "load_weights": None,
    "sample": SampleResponse,
    "compute_logprobs": list[float | None],
}


class CreateModelRequest(BaseModel):
    base_model: str
    lora_config: LoraConfig


class CreateSamplerRequest(BaseModel):
    model_path: str | None = None
    base_model: str | None = None
