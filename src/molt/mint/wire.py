"""The Tinker HTTP protocol's bodies, as the `tinker` SDK sends and expects them.

Most calls are JSON (the request models below: the SDK's field names, extra fields ignored). Three
are protobuf (``wire.proto``): the body of ``/api/v1/forward_backward`` and the results of
forward / forward_backward and sample. The codecs here turn those into molt's own types
(``molt.mint.types``, ``molt.mint.operations``) and back, for the server and for molt's client.
"""

from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from molt.mint import wire_pb2 as pb
from molt.mint.operations import ForwardRequest, SampledSequence, SampleResponse
from molt.mint.types import AdamParams, Datum, EncodedTextChunk, ForwardBackwardOutput, ModelInput, SamplingParams, TensorData

PROTOBUF = "application/x-protobuf"

DTYPES = {pb.DTYPE_FLOAT32: np.float32, pb.DTYPE_INT64: np.int64, pb.DTYPE_INT32: np.int32}
STOP_REASONS = {"stop": pb.STOP_REASON_STOP, "length": pb.STOP_REASON_LENGTH}


class UnsupportedError(ValueError):
    """A request for something molt does not do (images, server-side custom losses, …)."""


# --- protobuf: datums and forward_backward ----------------------------------------------------


def tensor_from_pb(tensor: pb.Tensor) -> TensorData:
    if tensor.dtype == pb.DTYPE_BFLOAT16:
        raise UnsupportedError("bfloat16 loss_fn_inputs are not supported; send float32")
    if tensor.dtype not in DTYPES:
        raise ValueError(f"loss_fn_inputs tensor has no dtype ({tensor.dtype})")
    dtype = DTYPES[tensor.dtype]
    shape = list(tensor.shape) or None
    if tensor.WhichOneof("encoding") == "sparse_csr":
        rows, cols = shape if shape and len(shape) == 2 else (None, None)
        if rows is None:
            raise ValueError("a sparse (CSR) tensor needs a 2-D shape")
        values = np.frombuffer(tensor.sparse_csr.values, dtype)
        crow = np.frombuffer(tensor.sparse_csr.crow_indices, np.int64)
        col = np.frombuffer(tensor.sparse_csr.col_indices, np.int64)
        dense = np.zeros((rows, cols), dtype)
        for row in range(rows):
            dense[row, col[crow[row] : crow[row + 1]]] = values[crow[row] : crow[row + 1]]
        array = dense
    else:
        array = np.frombuffer(tensor.dense, dtype)
        if shape is not None:
            array = array.reshape(shape)
    array = array.astype(np.int64 if dtype != np.float32 else np.float32)
    return TensorData(data=array.reshape(-1).tolist(), dtype="float32" if dtype == np.float32 else "int64", shape=shape)


def tensor_to_pb(data: TensorData) -> pb.Tensor:
    dtype = np.float32 if data.dtype == "float32" else np.int64
    return pb.Tensor(dense=np.asarray(data.data, dtype).tobytes(), dtype=pb.DTYPE_FLOAT32 if data.dtype == "float32" else pb.DTYPE_INT64, shape=data.shape or [])


def datum_from_pb(datum: pb.Datum) -> Datum:
    chunks = []
    for chunk in datum.model_input:
        kind = chunk.WhichOneof("chunk")
        if kind != "encoded_text":
            raise UnsupportedError(f"{kind} chunks are not supported: molt's bases read text tokens only")
        chunks.append(EncodedTextChunk(tokens=np.frombuffer(chunk.encoded_text.tokens, np.int32).tolist()))
    return Datum(model_input=ModelInput(chunks=chunks), loss_fn_inputs={k: tensor_from_pb(v) for k, v in datum.loss_fn_inputs.items()})


def datum_to_pb(datum: Datum) -> pb.Datum:
    chunks = [pb.Chunk(encoded_text=pb.EncodedTextChunk(tokens=np.asarray(c.tokens, np.int32).tobytes())) for c in datum.model_input.chunks]
    return pb.Datum(model_input=chunks, loss_fn_inputs={k: tensor_to_pb(v) for k, v in datum.loss_fn_inputs.items()})


def forward_request_to_pb(request: ForwardRequest, seq_id: int, forward_only: bool) -> bytes:
    message = pb.ForwardBackwardRequest(
        model_id=request.model_id, seq_id=seq_id, data=[datum_to_pb(d) for d in request.data], loss_fn=request.loss_fn,
        loss_fn_config=request.loss_fn_config or {}, forward_only=forward_only,
        loss_fn_config_v2={k: pb.LossConfigValue(number=v) for k, v in (request.loss_fn_config or {}).items()},
    )  # fmt: skip
    return message.SerializeToString()


def forward_request_from_pb(body: bytes) -> tuple[ForwardRequest, int, bool]:
    """(request, seq_id, forward_only) from a ``/forward_backward`` body."""
    message = pb.ForwardBackwardRequest()
    try:
        message.ParseFromString(body)
    except Exception as e:
        raise ValueError(f"forward_backward: the body is not a ForwardBackwardRequest protobuf ({e})") from e
    config = dict(message.loss_fn_config)
    for key, value in message.loss_fn_config_v2.items():
        if value.WhichOneof("value") == "text":
            raise UnsupportedError(f"loss_fn_config {key!r}: text values (server-side custom losses) are not supported; use forward_backward_custom")
        config[key] = value.number
    data = [datum_from_pb(d) for d in message.data]
    return ForwardRequest(model_id=message.model_id, data=data, loss_fn=message.loss_fn, loss_fn_config=config or None), message.seq_id, message.forward_only


def output_to_pb(output: ForwardBackwardOutput) -> bytes:
    """Per-datum outputs as one ArrayRecord: each field's datums one after another, with offsets."""
    record = pb.ArrayRecord(type_tag="ArrayRecord", num_datums=len(output.loss_fn_outputs))
    for name in output.loss_fn_outputs[0] if output.loss_fn_outputs else []:
        arrays = [np.asarray(out[name].data, np.float32) for out in output.loss_fn_outputs]
        offsets = np.cumsum([0] + [a.nbytes for a in arrays]).astype(np.int64)
        record.fields[name].CopyFrom(pb.BatchedTensor(data=b"".join(a.tobytes() for a in arrays), offsets=offsets.tobytes(), dtype=pb.DTYPE_FLOAT32))
    message = pb.ForwardBackwardOutput(loss_fn_output_type=output.loss_fn_output_type, loss_fn_outputs=[record], metrics=output.metrics)
    return message.SerializeToString()


def output_from_pb(body: bytes) -> ForwardBackwardOutput:
    message = pb.ForwardBackwardOutput()
    message.ParseFromString(body)
    outputs: list[dict[str, TensorData]] = []
    for record in message.loss_fn_outputs:
        per_datum: list[dict[str, TensorData]] = [{} for _ in range(record.num_datums)]
        for name, batched in record.fields.items():
            dtype = DTYPES[batched.dtype]
            offsets = np.frombuffer(batched.offsets, np.int64)
            for i in range(record.num_datums):
                values = np.frombuffer(batched.data[offsets[i] : offsets[i + 1]], dtype)
                per_datum[i][name] = TensorData(data=values.astype(np.float32 if dtype == np.float32 else np.int64).tolist(), dtype="float32" if dtype == np.float32 else "int64")
        outputs += per_datum
    return ForwardBackwardOutput(loss_fn_output_type=message.loss_fn_output_type, loss_fn_outputs=outputs, metrics=dict(message.metrics))


# --- protobuf: samples -------------------------------------------------------------------------


def sample_to_pb(response: SampleResponse) -> bytes:
    message = pb.SampleResponse(
        sequences=[
            pb.SampledSequence(stop_reason=STOP_REASONS[s.stop_reason], tokens=np.asarray(s.tokens, np.int32).tobytes(), logprobs=np.asarray(s.logprobs, np.float32).tobytes())
            for s in response.sequences
        ]
    )
    if response.prompt_logprobs is not None:
        message.prompt_logprobs = np.asarray([np.nan if p is None else p for p in response.prompt_logprobs], np.float32).tobytes()
    return message.SerializeToString()


def sample_from_pb(body: bytes) -> SampleResponse:
    message = pb.SampleResponse()
    message.ParseFromString(body)
    reasons = {v: k for k, v in STOP_REASONS.items()}
    sequences = [
        SampledSequence(tokens=np.frombuffer(s.tokens, np.int32).tolist(), logprobs=np.frombuffer(s.logprobs, np.float32).tolist(), stop_reason=reasons[s.stop_reason])
        for s in message.sequences
    ]
    prompt = None
    if message.HasField("prompt_logprobs"):
        prompt = [None if np.isnan(p) else float(p) for p in np.frombuffer(message.prompt_logprobs, np.float32)]
    return SampleResponse(sequences=sequences, prompt_logprobs=prompt)


# --- JSON requests -----------------------------------------------------------------------------


class Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class CreateSession(Body):
    tags: list[str] = []
    user_metadata: dict = {}
    sdk_version: str | None = None


class LoraConfigBody(Body):
    rank: int = 32
    seed: int | None = None
    train_unembed: bool = True
    train_mlp: bool = True
    train_attn: bool = True


class OptimizerConfig(Body):
    type: str = "adamw"


class CreateModel(Body):
    session_id: str
    model_seq_id: int = 0
    base_model: str
    lora_config: LoraConfigBody = LoraConfigBody()
    optimizer_config: OptimizerConfig = OptimizerConfig()


class OptimStep(Body):
    model_id: str
    seq_id: int | None = None
    adam_params: AdamParams | None = None
    optimizer_params: dict | None = None


class SaveWeights(Body):
    model_id: str
    path: str | None = None
    seq_id: int | None = None
    kind: Literal["snapshot", "inflight"] = "snapshot"
    sampling_session_seq_id: int | None = None


class LoadWeights(Body):
    """Into a training run (``model_id``), or a new run in a session (``session_id`` and
    ``model_seq_id``: ``create_training_client_from_state``)."""

    model_id: str | None = None
    session_id: str | None = None
    model_seq_id: int | None = None
    seq_id: int | None = None
    path: str
    optimizer: bool = False
    base_model: str | None = None


class CreateSamplingSession(Body):
    session_id: str
    sampling_session_seq_id: int = 0
    model_path: str | None = None
    base_model: str | None = None


class ASample(Body):
    sampling_session_id: str
    seq_id: int | None = None
    num_samples: int = Field(1, ge=1)
    prompt: ModelInput
    sampling_params: SamplingParams
    prompt_logprobs: bool = False
    topk_prompt_logprobs: int = 0
    topk_sample_logprobs: int = 0
    prompt_alt_tokens_k: int = 0
    target_prompt_logprobs: dict | None = None
    prompt_logprobs_last_n: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _text_only(cls, body: dict) -> dict:
        chunks = body.get("prompt", {}).get("chunks", []) if isinstance(body, dict) and isinstance(body.get("prompt"), dict) else []
        kinds = {c.get("type", "encoded_text") for c in chunks if isinstance(c, dict)} - {"encoded_text"}
        if kinds:
            raise UnsupportedError(f"{', '.join(sorted(kinds))} prompt chunks are not supported: molt's bases read text tokens only")
        return body

    def unsupported(self) -> str | None:
        """What this request asks for that molt does not compute, in words; None when nothing."""
        if self.topk_prompt_logprobs or self.topk_sample_logprobs:
            return "top-k logprobs"
        if self.prompt_alt_tokens_k or self.target_prompt_logprobs is not None or self.prompt_logprobs_last_n is not None:
            return "prompt alternative tokens, target prompt logprobs and prompt_logprobs_last_n"
        return None


class RetrieveFuture(Body):
    request_id: str
    allow_metadata_only: bool = False


class ModelRef(Body):
    model_id: str


class WeightsInfo(Body):
    tinker_path: str
