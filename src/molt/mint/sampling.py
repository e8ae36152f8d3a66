"""Sampling sessions over the molt engine: sample a saved revision (or the base) and score
sequences, with the engine's exact token logprobs.

One in-process engine per base model serves every revision as an adapter (the same unit the
HTTP engine and vLLM serve); a revision is loaded the first time a session asks for it.
"""

from dataclasses import dataclass

import torch

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams as EngineSamplingParams
from molt.mint.checkpoints import adapters_root, resolve
from molt.mint.futures import OrderedWorker
from molt.mint.operations import ComputeLogprobsRequest, SampledSequence, SampleRequest, SampleResponse
from molt.mint.types import ModelInput, SamplingParams


@dataclass
class SamplingSession:
    engine: LLMEngine
    worker: OrderedWorker
    adapter: str | None

    def sample(self, request: SampleRequest) -> SampleResponse:
        return self._sample(request.prompt, request.num_samples, request.sampling_params, request.include_prompt_logprobs)

    def compute_logprobs(self, request: ComputeLogprobsRequest) -> list[float | None]:
        """Logprob of each token of the prompt given those before it (None for the first)."""
        return self._sample(request.prompt, 1, SamplingParams(max_tokens=1, temperature=0), True).prompt_logprobs

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
    """One engine per base model, in the service's dtype, shared by every sampling session."""

    def __init__(self, dtype: torch.dtype):
        self.dtype = dtype
        self._engines: dict[str, tuple[LLMEngine, OrderedWorker]] = {}

    def session(self, base_model: str, model_path: str | None) -> SamplingSession:
        if model_path is not None:
            folder = resolve(model_path)  # checked before any engine is built
        if base_model not in self._engines:
            config = EngineConfig(model=base_model, dtype=str(self.dtype).removeprefix("torch."), adapters_root=adapters_root())
            self._engines[base_model] = (LLMEngine(config), OrderedWorker(f"mint-sample-{base_model}"))
        engine, worker = self._engines[base_model]
        if model_path is not None and model_path not in engine.adapters.adapters:  # revisions are immutable: load once
            engine.adapters.load(model_path, str(folder.relative_to(adapters_root())))
        return SamplingSession(engine, worker, model_path)
