"""Records what the pinned ``tinker`` SDK sends to ``molt mint serve`` and what molt answers, as
the fixture ``fixtures/tinker_wire.json`` that ``test_tinker_wire_fixtures.py`` replays.

Regenerate (after a deliberate protocol change): ``python tests/mint/tinker_wire_recording.py``.
Background traffic (heartbeats, telemetry, config refreshes) and long polls that ended in
``try_again`` are left out: what remains is one exchange per call, in the order they arrived.
"""

import base64
import json
import os
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict

from molt.mint import wire_pb2 as pb

os.environ.setdefault("TINKER_TELEMETRY", "0")

FIXTURE = Path(__file__).parent / "fixtures" / "tinker_wire.json"
KEY = "tml-molt-wire"
BACKGROUND = {"/api/v1/session_heartbeat", "/api/v1/telemetry", "/api/v1/client/dynamic_config"}
RESULT_MESSAGES = {"/api/v1/forward_backward": pb.ForwardBackwardOutput, "/api/v1/asample": pb.SampleResponse}
"""The protobuf message a route's future resolves to (read back through retrieve_future)."""


def body_record(content_type: str, body: bytes, message=None) -> dict | list | None:
    """A body as the fixture keeps it: JSON as JSON, protobuf as base64 plus a readable decoding."""
    if not body:
        return None
    if content_type.startswith("application/x-protobuf"):
        decoded = MessageToDict(message.FromString(body)) if message is not None else None
        return {"protobuf": base64.b64encode(body).decode(), "message": message.DESCRIPTOR.name if message else None, "decoded": decoded}
    return json.loads(body)


class Recorder:
    """ASGI wrapper that keeps each exchange's route, status and bodies."""

    def __init__(self, app):
        self.app = app
        self.exchanges: list[dict] = []
        self.issued: dict[str, str] = {}
        """request_id → the route that issued it (which protobuf message its result is)."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["path"] in BACKGROUND:
            return await self.app(scope, receive, send)
        sent, answer = bytearray(), {"body": bytearray()}

        async def receiving():
            message = await receive()
            if message["type"] == "http.request":
                sent.extend(message.get("body", b""))
            return message

        async def sending(message):
            if message["type"] == "http.response.start":
                answer["status"] = message["status"]
                answer["type"] = dict(message["headers"]).get(b"content-type", b"").decode()
            elif message["type"] == "http.response.body":
                answer["body"].extend(message.get("body", b""))
            await send(message)

        exchange = {"method": scope["method"], "route": scope["path"]}
        self.exchanges.append(exchange)  # in arrival order
        await self.app(scope, receiving, sending)
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        request_type = headers.get("content-type", "")
        exchange["request"] = body_record(request_type, bytes(sent), pb.ForwardBackwardRequest)
        exchange["status"] = answer["status"]
        message = None
        if scope["path"] == "/api/v1/retrieve_future":
            message = RESULT_MESSAGES.get(self.issued.get(exchange["request"]["request_id"], ""))
        exchange["response"] = body_record(answer["type"], bytes(answer["body"]), message)
        response = exchange["response"]
        if isinstance(response, dict) and "request_id" in response and scope["path"] != "/api/v1/retrieve_future":
            self.issued[response["request_id"]] = scope["path"]
        if isinstance(response, dict) and response.get("type") == "try_again":
            self.exchanges.remove(exchange)


def sdk_session(url: str) -> None:
    """One SDK session touching every call molt serves: SFT and RL steps, checkpoints, sampling,
    listings, and a refused request."""
    import tinker
    from tinker import types

    def datum(tokens, **inputs) -> types.Datum:
        return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], **inputs})

    with tinker.ServiceClient(base_url=url, api_key=KEY) as service:
        training = service.create_lora_training_client(base_model="tiny", rank=4, seed=0).result()
        training.forward_backward([datum([1, 2, 3, 4], weights=[1.0, 1.0, 1.0])], "cross_entropy").result()
        training.optim_step(types.AdamParams(learning_rate=1e-2)).result()
        training.forward([datum([5, 6, 7], weights=[1.0, 1.0])], "cross_entropy").result()
        state = training.save_state("wire-state").result().path
        sampler_path = training.save_weights_for_sampler("wire-sampler").result().path
        sampler = service.create_sampling_client(model_path=sampler_path).result()
        params = types.SamplingParams(max_tokens=3, temperature=1.0, seed=7, stop=[9])
        result = sampler.sample(types.ModelInput.from_ints([1, 2]), 2, params, include_prompt_logprobs=True).result()
        sampler.compute_logprobs(types.ModelInput.from_ints([3, 4, 5])).result()
        sequence = result.sequences[0]
        tokens = [1, 2, *sequence.tokens]
        padding = [0.0] * (len(tokens) - 1 - len(sequence.tokens))
        rl = datum(tokens, logprobs=padding + sequence.logprobs, advantages=padding + [1.0] * len(sequence.tokens))
        training.forward_backward([rl], "importance_sampling").result()
        training.save_weights_and_get_sampling_client().result()
        service.create_training_client_from_state_with_optimizer(state).result()
        rest = tinker.RestClient(base_url=url, api_key=KEY)
        rest.list_training_runs().result()
        rest.list_checkpoints(training.model_id).result()
        rest.get_weights_info_by_tinker_path(sampler_path).result()
        try:
            training.forward_backward([datum([1, 2, 3], weights=[1.0, 1.0])], "gspo").result()
        except tinker.BadRequestError:
            pass


def record() -> list[dict]:
    """Runs ``sdk_session`` against a fresh server on the tiny model; returns its exchanges."""
    from molt.http_server import ServerThread
    from molt.mint.server import create_app
    from molt.mint.service import LocalService, MintLimits

    recorder = Recorder(create_app(LocalService(limits=MintLimits(bases=("tiny",))), token=KEY))
    with ServerThread(recorder) as url:
        sdk_session(url)
    return recorder.exchanges


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as home:
        os.environ["MOLT_HOME"] = home  # checkpoints of the recording stay out of the user's home
        exchanges = record()
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(json.dumps(exchanges, indent=1) + "\n")
    print(f"{len(exchanges)} exchanges → {FIXTURE}", file=sys.stderr)
