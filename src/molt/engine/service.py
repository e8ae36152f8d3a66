"""The logic behind the engine's OpenAI routes: model names → adapters, messages → tokens through
the renderer, engine outputs → OpenAI response objects and stream chunks. Raises typed errors;
``routes.py`` maps them to HTTP in one place.
"""

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from molt.engine.adapters import AdapterNotFound
from molt.engine.async_engine import AsyncEngine
from molt.engine.engine import RequestError
from molt.engine.protocol import ChatCompletionRequest, CompletionRequest, ModelCard, ModelList, SamplingFields
from molt.engine.sampler import SamplingParams
from molt.engine.sequence import SequenceOutput
from molt.lora.format import AdapterError

log = logging.getLogger("molt.engine")


class ServiceError(Exception):
    status, type = 400, "BadRequestError"

    def __init__(self, message: str, param: str | None = None):
        super().__init__(message)
        self.param = param


class ModelNotFoundError(ServiceError):
    status, type = 404, "NotFoundError"


class EngineService:
    def __init__(self, engine: AsyncEngine):
        self.async_engine, self.engine = engine, engine.engine
        self.config = self.engine.config
        self.created = int(time.time())

    # -- models and adapters ---------------------------------------------------------------------
    def adapter_for(self, model: str) -> str | None:
        if model == self.config.base_name:
            return None
        if model in self.engine.adapters.adapters:
            return model
        raise ModelNotFoundError(f"The model `{model}` does not exist.", param="model")

    def models(self) -> ModelList:
        base, length = self.config.base_name, self.config.max_model_len
        cards = [ModelCard(id=base, created=self.created, root=self.config.model, max_model_len=length)]
        for name in self.engine.adapters.names():
            root = self.engine.adapters.adapters[name].path
            cards.append(ModelCard(id=name, created=self.created, root=root, parent=base, max_model_len=length))
        return ModelList(data=cards)

    def load_adapter(self, name: str, path: str, inplace: bool = False) -> str:
        if name == self.config.base_name:
            raise ServiceError(f"'{name}' is the base model's name", param="lora_name")
        if name in self.engine.adapters.adapters and not inplace:
            raise ServiceError(f"The lora adapter '{name}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.", param="lora_name")
        try:
            adapter = self.engine.adapters.load(name, path)
        except AdapterError as e:
            raise ServiceError(str(e), param="lora_path") from e
        return f"Success: LoRA adapter '{name}' added successfully (revision {adapter.revision})."

    def unload_adapter(self, name: str) -> str:
        try:
            self.engine.adapters.unload(name)
        except AdapterNotFound:
            raise ModelNotFoundError(f"The lora adapter '{name}' cannot be found.", param="lora_name") from None
        return f"Success: LoRA adapter '{name}' removed successfully."

    # -- requests → engine -----------------------------------------------------------------------
    def _params(self, body: SamplingFields, prompt_len: int, max_tokens: int | None, logprobs: bool) -> SamplingParams:
        if body.ignored_fields():
            log.info("ignoring unsupported request fields: %s", ", ".join(body.ignored_fields()))
        room = self.config.max_model_len - prompt_len
        if room < 1:
            raise ServiceError(
                f"the prompt has {prompt_len} tokens; this engine's max_model_len is {self.config.max_model_len}",
                param="messages" if isinstance(body, ChatCompletionRequest) else "prompt",
            )
        return SamplingParams(
            max_tokens=min(max_tokens or room, room),
            temperature=body.temperature,
            top_p=body.top_p,
            top_k=body.top_k,
            seed=body.seed,
            stop=body.stop_list,
            stop_token_ids=tuple(body.stop_token_ids),
            n=body.n,
            logprobs=logprobs,
            prompt_logprobs=body.prompt_logprobs is not None,
            ignore_eos=body.ignore_eos,
            return_routing=getattr(body, "return_routed_experts", False),
        )

    def chat_prompt(self, body: ChatCompletionRequest) -> tuple[list[int], list[dict] | None]:
        if isinstance(body.tool_choice, dict):
            raise ServiceError("a named tool_choice is not supported; use 'auto' or 'none'", param="tool_choice")
        tools = body.tools if body.tool_choice != "none" else None
        try:
            return self.engine.renderer.generation_prompt(body.messages, tools), tools
        except (ValueError, KeyError, TypeError) as e:
            raise ServiceError(f"invalid messages: {e}", param="messages") from e

    def completion_prompts(self, body: CompletionRequest) -> list[list[int]]:
        prompt = body.prompt
        if isinstance(prompt, str):
            prompts = [prompt]
        elif prompt and all(isinstance(p, int) for p in prompt):
            return [list(prompt)]
        else:
            prompts = list(prompt)
        if not prompts:
            raise ServiceError("prompt must not be empty", param="prompt")
        return [p if isinstance(p, list) else self.engine.tokenizer.encode(p, add_special_tokens=False) for p in prompts]

    async def run(self, prompt: list[int], params: SamplingParams, adapter: str | None) -> AsyncIterator[SequenceOutput]:
        request_id = uuid.uuid4().hex
        try:
            async for output in self.async_engine.generate(request_id, prompt, params, adapter):
                yield output
        except RequestError as e:
            raise ServiceError(str(e), param="prompt") from e
        except AdapterNotFound:
            raise ModelNotFoundError(f"The model `{adapter}` does not exist.", param="model") from None

    # -- chat ------------------------------------------------------------------------------------
    def start_chat(self, body: ChatCompletionRequest) -> tuple["ChatRun", AsyncIterator[SequenceOutput]]:
        adapter = self.adapter_for(body.model)
        prompt, tools = self.chat_prompt(body)
        params = self._params(body, len(prompt), body.max_completion_tokens or body.max_tokens, body.logprobs)
        return ChatRun(self, body, prompt, tools), self.run(prompt, params, adapter)

    def start_completion(self, body: CompletionRequest) -> tuple["CompletionRun", AsyncIterator[SequenceOutput]]:
        adapter = self.adapter_for(body.model)
        prompts = self.completion_prompts(body)
        streams = []
        for i, prompt in enumerate(prompts):
            params = self._params(body, len(prompt), body.max_tokens or 16, body.logprobs is not None)
            streams.append(_indexed(self.run(prompt, params, adapter), i * body.n))
        return CompletionRun(self, body, prompts), merge(streams)

    def token_text(self, token: int) -> str:
        return self.engine.tokenizer.decode([token])

    def prompt_logprobs(self, prompt: list[int], logprobs: list[float | None]) -> list[dict | None]:
        """vLLM's shape: per prompt position None (the first) or {"<token_id>": {logprob, rank, decoded_token}}."""
        return [None if lp is None else {str(t): {"logprob": lp, "rank": None, "decoded_token": self.token_text(t)}} for t, lp in zip(prompt, logprobs)]

    def metrics(self) -> str:
        stats = self.engine.stats()
        lines = [
            ("molt_requests_running", "gauge", "Sequences decoding or prefilling", stats.running),
            ("molt_requests_waiting", "gauge", "Sequences waiting for a slot", stats.waiting),
            ("molt_prefix_cache_hit_tokens_total", "counter", "Prompt tokens served from the prefix cache", stats.prefix_hit_tokens),
            ("molt_prefix_cache_miss_tokens_total", "counter", "Prompt tokens prefilled", stats.prefix_miss_tokens),
            ("molt_prefix_cache_blocks", "gauge", "K/V blocks held by the prefix cache", stats.prefix_blocks),
            ("molt_prefix_cache_bytes", "gauge", "Bytes held by the prefix cache", stats.prefix_bytes),
            ("molt_kv_cache_bytes", "gauge", "Bytes of the slot KV cache", stats.kv_cache_bytes),
            ("molt_engine_steps_total", "counter", "Engine steps run", stats.steps),
            ("molt_generation_tokens_total", "counter", "Tokens generated", stats.generated_tokens),
            ("molt_lora_adapters_loaded", "gauge", "Adapters loaded", len(self.engine.adapters.adapters)),
        ]
        text = [f"# HELP {n} {h}\n# TYPE {n} {t}\n{n} {v}" for n, t, h, v in lines]
        return "\n".join(text) + "\n"


async def _indexed(stream: AsyncIterator[SequenceOutput], offset: int) -> AsyncIterator[tuple[int, SequenceOutput]]:
    async for output in stream:
        yield offset + output.index, output


async def merge(streams: list[AsyncIterator[Any]]) -> AsyncIterator[Any]:
    """Items of several async iterators as they come; cancelling the merge cancels them all."""
    if len(streams) == 1:
        async for item in streams[0]:
            yield item
        return
    queue: asyncio.Queue = asyncio.Queue()
    done = object()

    async def pump(stream):
        try:
            async for item in stream:
                await queue.put(item)
            await queue.put(done)
        except BaseException as e:
            await queue.put(e)

    tasks = [asyncio.create_task(pump(s)) for s in streams]
    try:
        finished = 0
        while finished < len(tasks):
            item = await queue.get()
            if item is done:
                finished += 1
            elif isinstance(item, BaseException):
                raise item
            else:
                yield item
    finally:
        for task in tasks:
            task.cancel()


class ChatRun:
    """Builds the chat.completion response (or its stream chunks) from engine outputs."""

    def __init__(self, service: EngineService, body: ChatCompletionRequest, prompt: list[int], tools: list[dict] | None):
        self.service, self.body, self.prompt, self.tools = service, body, prompt, tools
        self.id, self.created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
        self.tokens: dict[int, list[int]] = {i: [] for i in range(body.n)}
        self.logprobs: dict[int, list[float]] = {i: [] for i in range(body.n)}
        self.text: dict[int, str] = {i: "" for i in range(body.n)}
        self.cached = 0

    def add(self, out: SequenceOutput) -> None:
        self.tokens[out.index] += out.token_ids
        self.logprobs[out.index] += out.logprobs
        self.text[out.index] += out.text
        self.cached = out.num_cached_tokens

    def message(self, index: int, finish_reason: str | None) -> tuple[dict, str | None]:
        if not self.tools:
            return {"role": "assistant", "content": self.text[index]}, finish_reason
        parsed = self.service.engine.renderer.tool_format.parse(self.text[index])
        message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
        if parsed.tool_calls:
            message.update(content=parsed.content or None, tool_calls=parsed.tool_calls)
            finish_reason = "tool_calls"
        return message, finish_reason

    def logprobs_content(self, tokens: list[int], logprobs: list[float]) -> dict | None:
        if not self.body.logprobs:
            return None
        entries = []
        for token, logprob in zip(tokens, logprobs):
            text = self.service.token_text(token)
            entries.append({"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": []})
        return {"content": entries}

    def usage(self) -> dict:
        completion = sum(len(t) for t in self.tokens.values())
        prompt = len(self.prompt)
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": self.cached},
        }

    def response(self, finish_reasons: dict[int, str | None], prompt_logprobs: list | None) -> dict:
        choices = []
        for i in range(self.body.n):
            message, reason = self.message(i, finish_reasons.get(i))
            choice = {"index": i, "message": message, "logprobs": self.logprobs_content(self.tokens[i], self.logprobs[i]), "finish_reason": reason}
            if self.body.return_token_ids:
                choice["token_ids"] = self.tokens[i]
            choices.append(choice)
        body = {"id": self.id, "object": "chat.completion", "created": self.created, "model": self.body.model, "choices": choices, "usage": self.usage()}
        if self.body.prompt_logprobs is not None:
            body["prompt_logprobs"] = self.service.prompt_logprobs(self.prompt, prompt_logprobs)
        if self.body.return_token_ids:
            body["prompt_token_ids"] = self.prompt
        return body

    def chunk(self, choices: list[dict], usage: dict | None = None) -> str:
        body = {"id": self.id, "object": "chat.completion.chunk", "created": self.created, "model": self.body.model, "choices": choices}
        if usage is not None:
            body["usage"] = usage
        return f"data: {json.dumps(body)}\n\n"

    async def stream(self, outputs: AsyncIterator[SequenceOutput]) -> AsyncIterator[str]:
        """SSE chunks: the role, then text deltas (with tools: the parsed message once the answer is
        complete, its tool calls followed by the finish reason in a chunk of its own, as vLLM
        sends them), then [DONE]."""
        yield self.chunk([{"index": i, "delta": {"role": "assistant", "content": ""}, "finish_reason": None} for i in range(self.body.n)])
        async for out in outputs:
            self.add(out)
            delta: dict[str, Any] = {}
            reason = None
            if self.tools and out.finished:
                message, reason = self.message(out.index, out.finish_reason)
                delta = {k: v for k, v in message.items() if k != "role" and v is not None}
                for n, call in enumerate(delta.get("tool_calls", [])):
                    call["index"] = n
            elif not self.tools and out.text:
                delta = {"content": out.text}
            if out.finished:
                reason = reason or out.finish_reason
            called = "tool_calls" in delta  # vLLM sends the calls, then the finish reason in a chunk of its own
            if delta or reason:
                choice = {"index": out.index, "delta": delta, "logprobs": self.logprobs_content(out.token_ids, out.logprobs), "finish_reason": None if called else reason}
                if self.body.return_token_ids:
                    choice["token_ids"] = out.token_ids
                yield self.chunk([choice])
            if called:
                yield self.chunk([{"index": out.index, "delta": {}, "logprobs": None, "finish_reason": reason}])
        if (self.body.stream_options or {}).get("include_usage"):
            yield self.chunk([], usage=self.usage())
        yield "data: [DONE]\n\n"

    async def collect(self, outputs: AsyncIterator[SequenceOutput]) -> dict:
        reasons: dict[int, str | None] = {}
        prompt_logprobs = None
        async for out in outputs:
            self.add(out)
            if out.prompt_logprobs is not None:
                prompt_logprobs = out.prompt_logprobs
            if out.finished:
                reasons[out.index] = out.finish_reason
        return self.response(reasons, prompt_logprobs)


class CompletionRun:
    """Builds the text_completion response (or its stream chunks) from engine outputs."""

    def __init__(self, service: EngineService, body: CompletionRequest, prompts: list[list[int]]):
        self.service, self.body, self.prompts = service, body, prompts
        self.id, self.created = f"cmpl-{uuid.uuid4().hex}", int(time.time())
        count = len(prompts) * body.n
        self.tokens = {i: [] for i in range(count)}
        self.logprobs = {i: [] for i in range(count)}
        self.text = {i: "" for i in range(count)}
        self.reasons: dict[int, str | None] = {}
        self.prompt_logprobs: dict[int, list | None] = {}
        self.routes: dict[int, SequenceOutput] = {}

    def add(self, index: int, out: SequenceOutput) -> None:
        self.tokens[index] += out.token_ids
        self.logprobs[index] += out.logprobs
        self.text[index] += out.text
        if out.prompt_logprobs is not None:
            self.prompt_logprobs[index] = out.prompt_logprobs
        if out.routed_experts is not None or out.sparse_indices is not None:
            self.routes[index] = out
        if out.finished:
            self.reasons[index] = out.finish_reason

    def legacy_logprobs(self, tokens: list[int], logprobs: list[float]) -> dict | None:
        if self.body.logprobs is None:
            return None
        texts = [self.service.token_text(t) for t in tokens]
        offsets = [sum(len(t) for t in texts[:i]) for i in range(len(texts))]
        return {"tokens": texts, "token_logprobs": logprobs, "top_logprobs": None, "text_offset": offsets}

    def choice(self, index: int, text: str, tokens: list[int], logprobs: list[float], reason: str | None) -> dict:
        choice = {"index": index, "text": text, "logprobs": self.legacy_logprobs(tokens, logprobs), "finish_reason": reason}
        if self.body.prompt_logprobs is not None and index in self.prompt_logprobs:
            choice["prompt_logprobs"] = self.service.prompt_logprobs(self.prompts[index // self.body.n], self.prompt_logprobs[index])
        if self.body.return_token_ids:
            choice["token_ids"] = tokens
            choice["prompt_token_ids"] = self.prompts[index // self.body.n]
        routed = self.routes.get(index)
        if routed is not None and routed.routed_experts is not None:
            choice["routed_experts"] = routed.routed_experts.tolist()
            choice["routed_expert_weights"] = routed.routed_weights.tolist()
        if routed is not None and routed.sparse_indices is not None:
            choice["sparse_attention_indices"] = routed.sparse_indices.tolist()
        return choice

    def usage(self) -> dict:
        prompt = sum(len(p) for p in self.prompts) * self.body.n
        completion = sum(len(t) for t in self.tokens.values())
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    async def collect(self, outputs: AsyncIterator[tuple[int, SequenceOutput]]) -> dict:
        async for index, out in outputs:
            self.add(index, out)
        choices = [self.choice(i, self.text[i], self.tokens[i], self.logprobs[i], self.reasons.get(i)) for i in sorted(self.tokens)]
        return {"id": self.id, "object": "text_completion", "created": self.created, "model": self.body.model, "choices": choices, "usage": self.usage()}

    async def stream(self, outputs: AsyncIterator[tuple[int, SequenceOutput]]) -> AsyncIterator[str]:
        async for index, out in outputs:
            self.add(index, out)
            if out.text or out.finished or out.prompt_logprobs is not None:
                choice = self.choice(index, out.text, out.token_ids, out.logprobs, out.finish_reason if out.finished else None)
                body = {"id": self.id, "object": "text_completion", "created": self.created, "model": self.body.model, "choices": [choice]}
                yield f"data: {json.dumps(body)}\n\n"
        if (self.body.stream_options or {}).get("include_usage"):
            body = {"id": self.id, "object": "text_completion", "created": self.created, "model": self.body.model, "choices": [], "usage": self.usage()}
            yield f"data: {json.dumps(body)}\n\n"
        yield "data: [DONE]\n\n"
