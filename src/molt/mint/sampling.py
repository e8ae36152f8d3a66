"""Tinker's ``SamplingClient`` over the molt engine: sample a saved revision (or the base) and
score sequences, with the engine's exact token logprobs.

One in-process engine per base model serves every revision as an adapter (the same unit the
HTTP engine and vLLM serve); a revision is loaded the first time a client asks for it.
"""

from pydantic import BaseModel

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams as EngineSamplingParams
from molt.mint.checkpoints import adapters_root, resolve
from molt.mint.futures import APIFuture, OrderedWorker
from molt.mint.types import ModelInput, SamplingParams


class SampledSequence(BaseModel):
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str
    """'stop' (a stop token or string) or 'length'."""


class SampleResponse(BaseModel):
    sequences: list[SampledSequence]
    prompt_logprobs: list[float | None] | None = None


class SamplingClient:
    def __init__(self, engine: LLMEngine, worker: OrderedWorker, adapter: str | None):
        self.engine, self._worker, self.adapter = engine, worker, adapter

    def sample(
        self, prompt: ModelInput, num_samples: int, sampling_params: SamplingParams, include_prompt_logprobs: bool = False
    ) -> APIFuture[SampleResponse]:
        return self._worker.submit(self._sample, prompt, num_samples, sampling_params, include_prompt_logprobs)

    async def sample_async(self, prompt: ModelInput, num_samples: int, sampling_params: SamplingParams, include_prompt_logprobs: bool = False) -> SampleResponse:
        return await self.sample(prompt, num_samples, sampling_params, include_prompt_logprobs).result_async()

    def compute_logprobs(self, prompt: ModelInput) -> APIFuture[list[float | None]]:
        """Logprob of each token of ``prompt`` given those before it (None for the first)."""
        params = SamplingParams(max_tokens=1, temperature=0)
        return self._worker.submit(lambda: self._sample(prompt, 1, params, True).prompt_logprobs)

    def _sample(self, prompt: ModelInput, num_samples: int, params: SamplingParams, prompt_logprobs: bool) -> SampleResponse:
        stop = params.stop if isinstance(params.stop, list) else ([params.stop] if params.stop else [])
        engine_params = EngineSamplingParams(
            max_tokens=params.max_tokens or 16,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k,
            seed=params.seed,
            stop=tuple(s for s in stop if isinstance(s, str)),
            stop_token_ids=tuple(s for s in stop if isinstance(s, int)),
            n=num_samples,
            logprobs=True,
            prompt_logprobs=prompt_logprobs,
        )
        events = self.engine.generate([prompt.to_ints()], engine_params, [self.adapter])[0]
        sequences = []
        for index in range(num_samples):
            mine = [e for e in events if e.index == index]
            sequences.append(SampledSequence(
                tokens=[t for e in mine for t in e.token_ids],
                logprobs=[lp for e in mine for lp in e.logprobs],
                stop_reason="length" if mine[-1].finish_reason == "length" else "stop",
            ))
        first = next((e.prompt_logprobs for e in events if e.prompt_logprobs is not None), None)
        return SampleResponse(sequences=sequences, prompt_logprobs=first)


class SamplingEngines:
    """One engine per base model, shared by every sampling client of a ServiceClient."""

    def __init__(self):
        self._engines: dict[str, tuple[LLMEngine, OrderedWorker]] = {}

    def client(self, base_model: str, model_path: str | None) -> SamplingClient:
        if base_model not in self._engines:
            config = EngineConfig(model=base_model, dtype="float32", adapters_root=adapters_root())
            self._engines[base_model] = (LLMEngine(config), OrderedWorker(f"mint-sample-{base_model}"))
        engine, worker = self._engines[base_model]
        if model_path is not None and model_path not in engine.adapters.adapters:  # revisions are immutable: load once
            engine.adapters.load(model_path, str(resolve(model_path).relative_to(adapters_root())))
        return SamplingClient(engine, worker, model_path)
