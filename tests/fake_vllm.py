"""A fake vLLM 0.11.0 OpenAI server that replays the recorded contract (``engine_contract.py``):
every body it sends is a recorded one with the run's values filled in (ids, model names, the
prompt's logprobs, the answer's text or tool call), so a client that works against it works
against the wire format vLLM sends. It keeps the adapters loaded at run time, as vLLM does with
``VLLM_ALLOW_RUNTIME_LORA_UPDATING=true``, and checks an adapter path the way vLLM does (a folder
with ``adapter_config.json``). With ``kind="sglang"`` the adapter routes are SGLang's
(``/load_lora_adapter`` at the root, ``{success, error_message, loaded_adapters}``).

The answers: a request with tools whose last message is the user's calls the first tool (with the
recorded arguments when it is the recorded tool, else ``{}``); any other answers
``FAKE_ANSWER``. Every request body is kept in ``requests`` as (path, body)."""

import copy
import json
import uuid
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from engine_contract import exchange, fill
from molt.http_server import ServerThread

FAKE_ANSWER = "Here is what I found."


def logprob_of(previous: int, token: int) -> float:
    """A made-up but fixed log-probability of ``token`` after ``previous``."""
    return -0.1 - ((previous * 7919 + token * 104729) % 97) / 10


class FakeVLLM:
    last: "FakeVLLM | None" = None
    """The fake started most recently (tests reach its state through it)."""

    def __init__(self, base: str, kind: str = "vllm"):
        self.base, self.kind = base, kind
        self.adapters: dict[str, str] = {}
        self.requests: list[tuple[str, dict]] = []
        self.app = FastAPI()
        self.app.get("/v1/models")(self.models)
        if kind == "vllm":
            self.app.post("/v1/load_lora_adapter")(self.load)
            self.app.post("/v1/unload_lora_adapter")(self.unload)
        else:
            self.app.post("/load_lora_adapter")(self.sglang_load)
            self.app.post("/unload_lora_adapter")(self.sglang_unload)
        self.app.post("/v1/completions")(self.completions)
        self.app.post("/v1/chat/completions")(self.chat)

    def __enter__(self) -> str:
        FakeVLLM.last = self
        self.server = ServerThread(self.app)
        return f"{self.server.__enter__()}/v1"

    def __exit__(self, *exc) -> None:
        self.server.__exit__(*exc)

    def recorded(self, name: str, **names: str):
        return fill(copy.deepcopy(exchange(name)["response"]["body"]), {"base": self.base, **names})

    def error(self, name: str, **names: str) -> JSONResponse:
        answer = exchange(name)["response"]
        return JSONResponse(fill(answer["body"], {"base": self.base, **names}), status_code=answer["status"])

    async def body(self, request: Request) -> dict | None:
        try:
            body = await request.json()
        except ValueError:
            return None
        self.requests.append((request.url.path, body))
        return body

    # -- models and adapters ----------------------------------------------------------------------
    async def models(self) -> dict:
        listed = self.recorded("models")
        template = exchange("models_with_adapter")["response"]["body"]["data"][1]
        for name, path in self.adapters.items():
            listed["data"].append(fill(template, {"base": self.base, "adapter": name, "adapter_path": path}))
        return listed

    def refused_path(self, path: str) -> bool:
        return not (Path(path) / "adapter_config.json").is_file()

    async def load(self, request: Request) -> Response:
        body = await self.body(request) or {}
        name, path = body.get("lora_name") or "", body.get("lora_path") or ""
        if not name or not path:
            return JSONResponse({"error": {"message": "Both 'lora_name' and 'lora_path' must be provided.", "type": "InvalidUserInput", "param": None, "code": 400}}, 400)
        if name in self.adapters:  # 0.11.0 has no load_inplace (an unknown field is ignored)
            return self.error("load_adapter_again", adapter=name)
        if self.refused_path(path):
            return JSONResponse({"error": {"message": f"Loading lora {name} failed: No adapter found for {path}", "type": "NotFoundError", "param": None, "code": 404}}, 404)
        self.adapters[name] = path
        return Response(self.recorded("load_adapter", adapter=name))  # plain text, no content type

    async def unload(self, request: Request) -> Response:
        name = (await self.body(request) or {}).get("lora_name", "")
        if name not in self.adapters:
            return self.error("unload_unknown_adapter", adapter=name)
        del self.adapters[name]
        return Response(self.recorded("unload_adapter", adapter=name))

    async def sglang_load(self, request: Request) -> JSONResponse:
        body = await self.body(request) or {}
        name, path = body.get("lora_name", ""), body.get("lora_path", "")
        if name in self.adapters:
            return self.sglang_answer(f"LoRA with name {name} already exists. Loaded LoRAs: dict_keys({list(self.adapters)})")
        if self.refused_path(path):
            return self.sglang_answer(f"Failed to load LoRA adapter {name} from {path}")
        self.adapters[name] = path
        return self.sglang_answer()

    async def sglang_unload(self, request: Request) -> JSONResponse:
        name = (await self.body(request) or {}).get("lora_name", "")
        if name not in self.adapters:
            return self.sglang_answer(f"LoRA with name {name} does not exist. Loaded LoRAs: dict_keys({list(self.adapters)})")
        del self.adapters[name]
        return self.sglang_answer()

    def sglang_answer(self, error: str = "") -> JSONResponse:
        body = {"rid": None, "http_worker_ipc": None, "success": not error, "error_message": error, "loaded_adapters": dict(self.adapters)}
        return JSONResponse(body, status_code=400 if error else 200)

    # -- generation -------------------------------------------------------------------------------
    def unknown(self, model: str) -> JSONResponse | None:
        served = [f"{self.base}:{name}" for name in self.adapters] if self.kind == "sglang" else list(self.adapters)  # SGLang: base:adapter
        if model in (self.base, *served) or not model:
            return None
        return JSONResponse({"error": {"message": f"The model `{model}` does not exist.", "type": "NotFoundError", "param": None, "code": 404}}, 404)

    def invalid(self, body: dict | None, field: str) -> JSONResponse | None:
        if body is not None and field in body:
            return None
        message = f"[{{'type': 'missing', 'loc': ('body', '{field}'), 'msg': 'Field required', 'input': {body!r}}}]"
        return JSONResponse({"error": {"message": message, "type": "Bad Request", "param": None, "code": 400}}, 400)

    async def completions(self, request: Request) -> JSONResponse:
        body = await self.body(request)
        if refused := self.invalid(body, "prompt") or self.unknown(body.get("model", "")):
            return refused
        prompts = body["prompt"] if body["prompt"] and isinstance(body["prompt"][0], list) else [body["prompt"]]
        answer = self.recorded("completion_prompt_logprobs", adapter=body.get("model") or self.base)
        template = answer["choices"][0]
        answer["choices"] = []
        for index, prompt in enumerate(prompts):
            scored = None
            if body.get("prompt_logprobs") is not None:
                scored = [None] + [{str(t): {"logprob": logprob_of(p, t), "rank": 1, "decoded_token": f"<{t}>"}} for p, t in zip(prompt, prompt[1:])]
            answer["choices"].append({**template, "index": index, "prompt_logprobs": scored})
        answer["id"] = f"cmpl-{uuid.uuid4().hex}"
        answer["usage"].update(prompt_tokens=sum(map(len, prompts)), completion_tokens=len(prompts), total_tokens=sum(map(len, prompts)) + len(prompts))
        return JSONResponse(answer)

    def reply(self, body: dict) -> tuple[str | None, dict | None]:
        """(content, tool call) of the answer."""
        if body.get("tools") and body["messages"][-1].get("role") == "user":
            name = body["tools"][0]["function"]["name"]
            recorded = exchange("chat_tool_call")["tool_call"]
            return None, {"name": name, "arguments": recorded["arguments"] if name == recorded["name"] else {}}
        return FAKE_ANSWER, None

    async def chat(self, request: Request) -> Response:
        body = await self.body(request)
        if refused := self.invalid(body, "messages") or self.unknown(body.get("model", "")):
            return refused
        model = body.get("model") or self.base
        content, call = self.reply(body)
        if body.get("stream"):
            return StreamingResponse(self.stream(body, model, content, call), media_type="text/event-stream")
        answer = self.recorded("chat_tool_call" if call else "chat", adapter=model)
        answer["id"] = f"chatcmpl-{uuid.uuid4().hex}"
        message = answer["choices"][0]["message"]
        if call:
            message["tool_calls"][0].update(id=f"chatcmpl-tool-{uuid.uuid4().hex}", function={"name": call["name"], "arguments": json.dumps(call["arguments"], ensure_ascii=False)})
        else:
            message["content"] = content
        return JSONResponse(answer)

    async def stream(self, body: dict, model: str, content: str | None, call: dict | None):
        chunks = self.recorded("chat_stream_tool_call" if call else "chat_stream", adapter=model)
        chunk_id = f"chatcmpl-{uuid.uuid4().hex}"
        role, *middle, finish, usage = chunks
        if call:
            head, *_ = middle
            head["choices"][0]["delta"]["tool_calls"][0].update(id=f"chatcmpl-tool-{uuid.uuid4().hex}", function={"name": call["name"]})
            arguments = json.dumps(call["arguments"], ensure_ascii=False)
            pieces = [arguments[: len(arguments) // 2], arguments[len(arguments) // 2 :]]
            middle = [head] + [{**head, "choices": [{**head["choices"][0], "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]} for p in pieces]
        else:
            words = content.split(" ")
            middle = [{**middle[0], "choices": [{**middle[0]["choices"][0], "delta": {"content": w if i == 0 else " " + w}}]} for i, w in enumerate(words)]
        sent = [role, *middle, finish]
        if (body.get("stream_options") or {}).get("include_usage"):
            sent.append(usage)
        for chunk in sent:
            yield f"data: {json.dumps({**chunk, 'id': chunk_id}, ensure_ascii=False)}\n\n"
        yield "data: [DONE]\n\n"
