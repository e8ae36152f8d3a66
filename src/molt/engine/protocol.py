"""OpenAI-compatible request and response bodies (fields in OpenAI's order), plus vLLM's adapter
routes. Fields molt adds, as vLLM does through ``extra_body``, are fenced at the end of each model.

Unknown request fields are accepted and ignored, as OpenAI's own server and vLLM do, so clients
that send newer fields keep working; each ignored field is logged by the service.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from molt.models.chat_shapes import Messages, Tools


class OpenAIBody(BaseModel):
    model_config = ConfigDict(extra="allow")

    def ignored_fields(self) -> list[str]:
        return sorted(self.model_extra or {})


class SamplingFields(OpenAIBody):
    model: str
    max_tokens: int | None = Field(None, ge=1)
    temperature: float = Field(1.0, ge=0, le=2)
    top_p: float = Field(1.0, gt=0, le=1)
    n: int = Field(1, ge=1, le=64)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    # -- molt-specific (vLLM names) ----------------------------------------------------------------
    top_k: int = Field(0, ge=-1)
    stop_token_ids: list[int] = []
    prompt_logprobs: int | None = Field(None, ge=0, le=0)
    """vLLM's: logprobs of the prompt tokens, as [None, {token_id: {logprob, rank, decoded_token}}, ...]
    (0: the prompt token alone; molt computes no top-k alternatives)."""
    ignore_eos: bool = False
    return_token_ids: bool = False
    """Add ``token_ids`` (and ``prompt_token_ids``) to each choice, as vLLM does; RL needs the exact tokens."""

    @property
    def stop_list(self) -> tuple[str, ...]:
        if self.stop is None:
            return ()
        return (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)


class ChatCompletionRequest(SamplingFields):
    messages: Messages
    max_completion_tokens: int | None = Field(None, ge=1)
    logprobs: bool = False
    top_logprobs: int | None = Field(None, ge=0, le=0)
    tools: Tools | None = None
    tool_choice: Literal["none", "auto"] | dict[str, Any] | None = None


class CompletionRequest(SamplingFields):
    prompt: str | list[int] | list[str] | list[list[int]]
    logprobs: int | None = Field(None, ge=0, le=1)
    echo: Literal[False] = False
    return_routed_experts: bool = False
    """Add the base's routing of every token fed (prompt + completion − 1 positions) to each
    finished choice, for RL's routing replay: on sparse-MoE bases ``routed_experts`` (vLLM's name;
    (positions, MoE layers, top_k) expert ids) and ``routed_expert_weights`` (their gate weights);
    on sparse-attention bases ``sparse_attention_indices`` ((positions, sparse layers, top_k)
    attended positions, -1: none). Such a request does not reuse prefix-cached K/V."""


class ErrorBody(BaseModel):
    message: str
    type: str
    param: str | None = None
    code: int


class ErrorResponse(BaseModel):
    error: ErrorBody


class LoadLoraAdapterRequest(BaseModel):
    lora_name: str = Field(min_length=1)
    lora_path: str = Field(min_length=1)
    load_inplace: bool = False
    """Replace an adapter already served under ``lora_name`` (vLLM 0.34's field); without it, 400."""


class UnloadLoraAdapterRequest(BaseModel):
    lora_name: str = Field(min_length=1)
    lora_int_id: int | None = None


class ModelCard(BaseModel):
    id: str
    object: Literal["model"] = "model"
    created: int
    owned_by: str = "molt"
    root: str
    parent: str | None = None
    max_model_len: int


class ModelList(BaseModel):
    object: Literal["list"] = "list"
    data: list[ModelCard]
