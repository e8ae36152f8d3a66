"""An OpenAI engine that answers from a script, for the proxy's handling of engines that
misbehave (a call to a function nobody offered, an error mid-stream, a 4xx of its own). It is a
real HTTP server the proxy reaches over the network, as it reaches the molt engine or vLLM.

Each request to /v1/chat/completions takes the next reply of the script: a message dict (a
JSON completion, or chunks when the request streams), ``(status, error message)``, or a list of
SSE data objects streamed as they are. Every request body is kept in ``requests``."""

import json

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

from molt.http_api import error_json
from molt.http_server import ServerThread


def call(name: str, arguments: dict, call_id: str = "call_1") -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


class ScriptedEngine:
    def __init__(self, script: list, completions_status: int = 200):
        self.script, self.requests, self.completions_status = list(script), [], completions_status
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.chat)
        self.app.post("/v1/completions")(self.completions)

    async def chat(self, request: Request):
        body = await request.json()
        self.requests.append(body)
        reply = self.script.pop(0)
        if isinstance(reply, tuple):
            return error_json(reply[0], reply[1], "BadRequestError")
        if isinstance(reply, list):
            return StreamingResponse(sse(reply), media_type="text/event-stream")
        finish = "tool_calls" if reply.get("tool_calls") else "stop"
        if body.get("stream"):
            delta = {k: v for k, v in reply.items() if v is not None}
            if "tool_calls" in delta:
                delta["tool_calls"] = [{**c, "index": i} for i, c in enumerate(delta["tool_calls"])]
            return StreamingResponse(sse([{"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}, {"choices": [], "usage": usage()}]), media_type="text/event-stream")
        return JSONResponse({"id": "x", "object": "chat.completion", "choices": [{"index": 0, "message": reply, "finish_reason": finish}], "usage": usage()})

    async def completions(self, request: Request):
        return JSONResponse({"error": {"message": "scorer down", "type": "InternalServerError", "code": 500}}, status_code=self.completions_status)

    def __enter__(self) -> str:
        self.server = ServerThread(self.app)
        return f"{self.server.__enter__()}/v1"

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)


def usage() -> dict:
    return {"prompt_tokens": 10, "completion_tokens": 3, "total_tokens": 13}


async def sse(chunks: list[dict]):
    for chunk in chunks:
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"
