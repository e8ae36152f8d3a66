"""The Tinker wire format, pinned by a recording (``fixtures/tinker_wire.json``) of one SDK session
against ``molt mint serve`` on the tiny model (regenerate: ``python tests/mint/tinker_wire_recording.py``).

Three checks: the pinned SDK still sends exactly those requests (routes and body shapes); molt
answers the recorded requests, replayed on a fresh server, with the recorded statuses and shapes;
and the SDK's own response types and protobuf decoders read every recorded answer.
"""

import base64
import json
import re

import httpx
import pytest

tinker = pytest.importorskip("tinker")
from tinker import types  # noqa: E402
from tinker.proto.response_conv import deserialize_forward_backward_output, deserialize_sample_response  # noqa: E402

from molt.http_server import ServerThread  # noqa: E402
from molt.mint.server import create_app  # noqa: E402
from molt.mint.service import LocalService, MintLimits  # noqa: E402
from tinker_wire_recording import FIXTURE, KEY, record  # noqa: E402

RECORDED = json.loads(FIXTURE.read_text())

ANSWERS = {
    "/api/v1/client/config": types.ClientConfigResponse,
    "/api/v1/create_session": types.CreateSessionResponse,
    "/api/v1/get_info": types.GetInfoResponse,
    "/api/v1/create_sampling_session": types.CreateSamplingSessionResponse,
    "/api/v1/samplers/": types.GetSamplerResponse,
    "/api/v1/training_runs": types.TrainingRunsResponse,
    "/checkpoints": types.CheckpointsListResponse,
    "/api/v1/weights_info": types.WeightsInfoResponse,
}
"""Route (or its start or end) → the SDK type that reads its JSON answer."""
RESULTS = {
    "/api/v1/create_model": types.CreateModelResponse,
    "/api/v1/optim_step": types.OptimStepResponse,
    "/api/v1/save_weights": types.SaveWeightsResponse,
    "/api/v1/load_weights": types.LoadWeightsResponse,
    "/api/v1/save_weights_for_sampler": types.SaveWeightsForSamplerResponseInternal,  # path, or a sampling session
    "/api/v1/forward_backward": deserialize_forward_backward_output,
    "/api/v1/asample": deserialize_sample_response,
}
"""Issuing route → what reads its future's result (retrieve_future)."""


def shape(value):
    """What the format fixes: keys, types and list lengths; not ids, numbers or times."""
    if isinstance(value, dict):
        if "protobuf" in value:
            return {"protobuf": value["message"], "decoded": shape(value["decoded"])}
        return {key: shape(v) for key, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(v) for v in value]
    return "number" if isinstance(value, (int, float)) and not isinstance(value, bool) else type(value).__name__


def route_shape(route: str) -> str:
    return re.sub(r"session-[0-9a-f]+(:[a-z]+:\d+(:[0-9a-f]+)?)?", "<id>", route)


def test_the_pinned_sdk_sends_the_recorded_requests(molt_home):
    live = record()
    assert [(e["method"], route_shape(e["route"]), shape(e["request"])) for e in live] == [
        (e["method"], route_shape(e["route"]), shape(e["request"])) for e in RECORDED
    ]


class Ids:
    """Maps the recording's ids (sessions, runs, requests, samplers) to a replay's."""

    def __init__(self):
        self.known: dict[str, str] = {}

    def learn(self, recorded, live) -> None:
        if isinstance(recorded, dict) and isinstance(live, dict):
            for key in recorded.keys() & live.keys():
                self.learn(recorded[key], live[key])
        elif isinstance(recorded, list) and isinstance(live, list):
            for r, v in zip(recorded, live):
                self.learn(r, v)
        elif isinstance(recorded, str) and isinstance(live, str) and recorded != live and re.match(r"(req|session)-", recorded):
            self.known[recorded] = live
            if ":" in recorded:  # a run or sampler id: its session too
                self.known.setdefault(recorded.split(":")[0], live.split(":")[0])

    def apply(self, text: str) -> str:
        for old in sorted(self.known, key=len, reverse=True):
            text = text.replace(old, self.known[old])
        return text


def replay_body(exchange: dict, ids: Ids) -> tuple[bytes | None, str]:
    request = exchange["request"]
    if request is None:
        return None, "application/json"
    if "protobuf" in request:
        from molt.mint import wire_pb2

        message = wire_pb2.ForwardBackwardRequest.FromString(base64.b64decode(request["protobuf"]))
        message.model_id = ids.apply(message.model_id)
        return message.SerializeToString(), "application/x-protobuf"
    return ids.apply(json.dumps(request)).encode(), "application/json"


def answer_record(response: httpx.Response, message: str | None):
    from google.protobuf.json_format import MessageToDict

    from molt.mint import wire_pb2

    if not response.content:
        return None
    if response.headers["content-type"].startswith("application/x-protobuf"):
        decoded = MessageToDict(getattr(wire_pb2, message).FromString(response.content))
        return {"protobuf": response.content, "message": message, "decoded": decoded}
    return response.json()


def test_molt_answers_the_recorded_requests_in_the_recorded_shapes(molt_home):
    ids = Ids()
    with ServerThread(create_app(LocalService(limits=MintLimits(bases=("tiny",))), token=KEY)) as url, httpx.Client(base_url=url, timeout=60) as http:
        for exchange in RECORDED:
            body, content_type = replay_body(exchange, ids)
            response = http.request(exchange["method"], ids.apply(exchange["route"]), content=body, headers={"x-api-key": KEY, "content-type": content_type})
            recorded = exchange["response"]
            live = answer_record(response, recorded.get("message") if isinstance(recorded, dict) else None)
            assert (response.status_code, shape(live)) == (exchange["status"], shape(recorded)), exchange["route"]
            ids.learn(recorded, live)


def reader(exchange: dict, issued: dict[str, str]):
    route = exchange["route"]
    if route == "/api/v1/retrieve_future":
        return RESULTS[issued[exchange["request"]["request_id"]]]
    return next((kind for key, kind in ANSWERS.items() if route == key or (key.endswith("/") and route.startswith(key)) or route.endswith(key)), None)


def test_the_sdk_reads_every_recorded_answer():
    issued, read = {}, 0
    for exchange in RECORDED:
        answer = exchange["response"]
        if exchange["status"] != 200:
            assert answer["detail"] and answer["error_type"]  # what the SDK's error message shows
            continue
        if isinstance(answer, dict) and "request_id" in answer and exchange["route"] != "/api/v1/retrieve_future":
            issued[answer["request_id"]] = exchange["route"]
        kind = reader(exchange, issued)
        if kind is None:
            continue
        if isinstance(answer, dict) and "protobuf" in answer:
            kind(base64.b64decode(answer["protobuf"]))
        else:
            kind.model_validate(answer)
        read += 1
    assert read >= 20
