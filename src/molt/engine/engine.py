"""The engine loop: continuous batching over one base model and many adapters.

One ``step()`` is: 1 drop aborted → 2 admit → 3 prefill one chunk budget → 4 decode all running rows →
5 finish → 6 emit. Requests join and leave between steps; one decode batch mixes adapters and
base-only rows; the n samples of one request share the prompt's prefill through the prefix cache. Prefill is chunked: each step spends at most ``max_prefill_chunk`` prompt tokens,
in arrival order, over the sequences being prefilled (several short prompts share one forward as
right-padded rows), interleaved with the decode step, so a long prompt delays running requests
by one chunk per step rather than by its whole length.

Slot invariant (see ``kv_cache.py``): decoding sequences occupy slots 0..n-1, the sequences being
prefilled occupy the slots after them, in arrival order. A prompt finishes prefilling only after
every prompt before it, so finished ones always leave from the front of that list.

Single-threaded by design: ``AsyncEngine`` runs ``step()`` on one thread and talks to it only
through ``add_request`` / ``abort``, which are safe to call from other threads.
"""

import itertools
import threading
from collections import deque
from dataclasses import dataclass

import torch

from molt.engine.adapters import AdapterManager
from molt.engine.config import EngineConfig
from molt.engine.model import EngineModel, Routing
from molt.engine.prefix_cache import PrefixCache
from molt.engine.sampler import SamplingParams, make_generator, sample
from molt.engine.sequence import Sequence, SequenceOutput, Status
from molt.models import LoadedModel, load_model
from molt.models.renderer import get_renderer


class RequestError(ValueError):
    """A request the engine cannot take (prompt too long, empty, unknown adapter)."""


@dataclass(frozen=True)
class EngineStats:
    running: int
    waiting: int
    prefix_hit_tokens: int
    prefix_miss_tokens: int
    prefix_blocks: int
    prefix_bytes: int
    kv_cache_bytes: int
    steps: int
    generated_tokens: int


class LLMEngine:
    def __init__(self, config: EngineConfig = EngineConfig(), loaded: LoadedModel | None = None):
        self.config = config
        loaded = loaded or load_model(config.model)
        self.tokenizer = loaded.tokenizer
        self.renderer = get_renderer(loaded.tokenizer)
        self.model = EngineModel(loaded, config.torch_dtype, config.packed_weights)
        # one chunk of headroom: a short prompt padded to the step's widest chunk writes past its end
        self.cache = self.model.new_cache(config.max_num_seqs, config.max_model_len + config.max_prefill_chunk, config.torch_kv_cache_dtype)
        self.prefix = PrefixCache(config.prefix_block_size, config.prefix_cache_mb * 2**20)
        self.adapters = AdapterManager(config.adapters_root, self.model.model, self.model.layout, self.model.dtype)
        for name, path in config.lora_modules.items():
            self.adapters.load(name, path)
        self.eos_ids = set(self.renderer.stop_token_ids) | {self.tokenizer.eos_token_id}
        self.waiting: deque[Sequence] = deque()
        self.decoding: list[Sequence] = []  # slot i holds decoding[i]
        self.prefilling: list[Sequence] = []  # slots len(decoding)...
        self._aborts: set[str] = set()
        self._lock = threading.Lock()
        self._offline_ids = itertools.count()
        self.steps = self.generated_tokens = 0

    # -- requests (any thread) -------------------------------------------------------------------
    def add_request(self, request_id: str, prompt_ids: list[int], params: SamplingParams, adapter: str | None = None) -> None:
        if not prompt_ids:
            raise RequestError("the prompt is empty")
        if len(prompt_ids) >= self.config.max_model_len:
            raise RequestError(
                f"the prompt has {len(prompt_ids)} tokens; this engine's max_model_len is {self.config.max_model_len}"
            )
        vocab = self.model.shape.vocab_size
        if any(not 0 <= t < vocab for t in prompt_ids):
            raise RequestError(f"prompt token ids must be in [0, {vocab})")
        if params.return_routing and not self.model.routes:
            raise RequestError("return_routed_experts needs a base with routing to record; this model has no MoE or sparse-attention layers")
        serving = self.adapters.get(adapter) if adapter else None
        sequences = [
            Sequence(request_id, i, list(prompt_ids), params, serving, make_generator(params, i))
            for i in range(params.n)
        ]
        for sibling in sequences[1:]:
            sibling.leader = sequences[0]
        with self._lock:
            self.waiting.extend(sequences)

    def abort(self, request_id: str) -> None:
        with self._lock:
            self._aborts.add(request_id)

    def has_work(self) -> bool:
        return bool(self.waiting or self.decoding or self.prefilling or self._aborts)

    def _move(self, seq: Sequence, slot: int) -> None:
        self.cache.move(seq.slot, slot, seq.num_computed)
        seq.slot = slot

    # -- the loop (engine thread) ----------------------------------------------------------------
    def step(self) -> list[SequenceOutput]:
        outputs: list[SequenceOutput] = []
        self._drop_aborted(outputs)  # 1
        self._admit()  # 2
        self.model.reside(self.adapters.resident())  # loaded adapters become slots (re-packs only on change)
        prefilled = self._prefill_chunk()  # 3
        self._decode()  # 4
        self.decoding += prefilled
        for seq in list(self.decoding):  # 5 + 6
            outputs.append(self._emit(seq))
        self.steps += 1
        return outputs

    def _drop_aborted(self, outputs: list[SequenceOutput]) -> None:
        with self._lock:
            aborts, self._aborts = self._aborts, set()
            dropped = [s for s in self.waiting if s.request_id in aborts]
            self.waiting = deque(s for s in self.waiting if s.request_id not in aborts)
        running = [*self.decoding, *self.prefilling]
        for seq in dropped + [s for s in running if s.request_id in aborts]:
            seq.finish_reason = "abort"
            outputs.append(self._emit(seq))

    def _admit(self) -> None:
        held: list[Sequence] = []
        while len(self.decoding) + len(self.prefilling) < self.config.max_num_seqs:
            with self._lock:
                if not self.waiting:
                    break
                seq = self.waiting.popleft()
            if self._after_leader(seq):
                held.append(seq)
                continue
            seq.status, seq.slot = Status.PREFILLING, len(self.decoding) + len(self.prefilling)
            if seq.params.prompt_logprobs:
                seq.prompt_logprobs = [None]
            elif self.config.prefix_cache_mb and not seq.params.return_routing:  # cached K/V carry no routing
                seq.num_cached = seq.num_computed = self.prefix.load(seq.prefix_root, seq.prompt_ids, self.cache, seq.slot)
            self.prefilling.append(seq)
        with self._lock:
            self.waiting.extendleft(reversed(held))

    def _after_leader(self, seq: Sequence) -> bool:
        """Parallel samples (n > 1) share their prompt's prefill: the first one prefills, the others
        wait in the queue until it is done, then find the prompt's K/V in the prefix cache."""
        shares = self.config.prefix_cache_mb and not (seq.params.prompt_logprobs or seq.params.return_routing)
        waiting_on = seq.leader is not None and seq.leader.status in (Status.WAITING, Status.PREFILLING)
        return bool(shares and waiting_on and len(seq.prompt_ids) > self.config.prefix_block_size)

    def _prefill_chunk(self) -> list[Sequence]:
        """Spend this step's prompt-token budget on the front of the prefilling list, in one
        forward; return the sequences whose prompts are now done (a prefix of the list)."""
        rows, chunks, budget = [], [], self.config.max_prefill_chunk
        for seq in self.prefilling:
            if budget == 0 or (rows and (seq.params.prompt_logprobs or rows[0].params.prompt_logprobs)):
                break  # a sequence that wants every prompt logit is prefilled on its own
            chunk = seq.prompt_ids[seq.num_computed : seq.num_computed + budget]
            rows.append(seq)
            chunks.append(chunk)
            budget -= len(chunk)
        if not rows:
            return []
        want_all = rows[0].params.prompt_logprobs
        width = max(len(c) for c in chunks)
        tokens = torch.tensor([c + [0] * (width - len(c)) for c in chunks])  # right-padded; padding is never attended
        routes = self._routes_wanted(rows)
        logits = self.model.forward(
            tokens, [s.num_computed for s in rows], rows[0].slot, self.cache, [s.adapter for s in rows],
            all_logits=want_all, last_B=[len(c) - 1 for c in chunks], routing=routes,
        )  # (B, T or 1, V)
        self._record_routes(rows, routes, [len(c) for c in chunks])
        for seq, chunk in zip(rows, chunks):
            start, seq.num_computed = seq.num_computed, seq.num_computed + len(chunk)
            if want_all:
                targets = seq.prompt_ids[start + 1 : seq.num_computed + 1]
                logprobs = torch.log_softmax(logits[0, : len(targets)], -1)
                seq.prompt_logprobs += logprobs[torch.arange(len(targets)), torch.tensor(targets)].tolist()
        done = [i for i, seq in enumerate(rows) if seq.num_computed == len(seq.prompt_ids)]
        if not done:
            return []
        last = logits[done, -1] if not want_all else logits[0, len(chunks[0]) - 1 :][:1]
        tokens, logprobs = sample(last, [rows[i].params for i in done], [rows[i].generator for i in done])
        finished = [rows[i] for i in done]
        for seq, token, logprob in zip(finished, tokens, logprobs):
            if self.config.prefix_cache_mb:
                self.prefix.store(seq.prefix_root, seq.prompt_ids, self.cache, seq.slot)
            self._append(seq, token, logprob)
            seq.status = Status.DECODING
        self.prefilling = self.prefilling[len(finished) :]
        return finished

    def _decode(self) -> None:
        rows = [s for s in self.decoding if s.status is Status.DECODING]
        if not rows:
            return
        tokens = torch.tensor([[s.output_ids[-1]] for s in rows])
        starts = [s.num_computed for s in rows]
        routes = self._routes_wanted(rows)
        logits = self.model.forward(tokens, starts, 0, self.cache, [s.adapter for s in rows], routing=routes)[:, -1]
        self._record_routes(rows, routes, [1] * len(rows))
        for seq in rows:
            seq.num_computed += 1
        new_tokens, logprobs = sample(logits, [s.params for s in rows], [s.generator for s in rows])
        for seq, token, logprob in zip(rows, new_tokens, logprobs):
            self._append(seq, token, logprob)

    @staticmethod
    def _routes_wanted(rows: list[Sequence]) -> Routing | None:
        return Routing() if any(s.params.return_routing for s in rows) else None

    @staticmethod
    def _record_routes(rows: list[Sequence], routing: Routing | None, lengths: list[int]) -> None:
        """Keep the routing of each real (unpadded) token fed, for the rows that asked: per kind,
        (T, layers, top_k)."""
        if routing is None:
            return
        kinds = {
            "routed_experts": (routing.experts, torch.int16), "routed_weights": (routing.gates, torch.float32),
            "sparse_indices": (routing.attended, torch.int32),
        }  # fmt: skip
        stacked = {name: (torch.stack(layers, 2), dtype) for name, (layers, dtype) in kinds.items() if layers}  # (B, T, layers, k)
        for b, (seq, n) in enumerate(zip(rows, lengths)):
            if seq.params.return_routing:
                seq.routes.append({name: t[b, :n].to(dtype) for name, (t, dtype) in stacked.items()})

    def _append(self, seq: Sequence, token: int, logprob: float | None) -> None:
        seq.output_ids.append(token)
        seq.output_logprobs.append(logprob)
        self.generated_tokens += 1
        if (token in self.eos_ids and not seq.params.ignore_eos) or token in seq.params.stop_token_ids:
            seq.finish_reason = "stop"
        elif len(seq.output_ids) >= seq.params.max_tokens or len(seq.all_ids) >= self.config.max_model_len:
            seq.finish_reason = "length"

    def _emit(self, seq: Sequence) -> SequenceOutput:
        if seq.finish_reason:
            seq.status = Status.FINISHED
        text, stopped = seq.next_text(self.tokenizer)
        if stopped:
            seq.status, seq.finish_reason = Status.FINISHED, "stop"
        finished = seq.status is Status.FINISHED
        tokens = seq.output_ids[seq.emitted_tokens :]
        output = SequenceOutput(
            request_id=seq.request_id,
            index=seq.index,
            token_ids=tokens,
            logprobs=seq.output_logprobs[seq.emitted_tokens :],
            text=text,
            finished=finished,
            finish_reason=seq.finish_reason if finished else None,
            num_prompt_tokens=len(seq.prompt_ids),
            num_output_tokens=len(seq.output_ids),
            num_cached_tokens=seq.num_cached,
            prompt_logprobs=seq.prompt_logprobs if seq.emitted_tokens == 0 else None,
            **(self._routing(seq) if finished and seq.params.return_routing else {}),
        )
        seq.emitted_tokens = len(seq.output_ids)
        seq.emitted_text += text
        if finished:
            self._release(seq)
        return output

    @staticmethod
    def _routing(seq: Sequence) -> dict[str, torch.Tensor]:
        if not seq.routes:  # aborted before its first forward
            return {}
        return {name: torch.cat([r[name] for r in seq.routes]) for name in seq.routes[0]}

    def _release(self, seq: Sequence) -> None:
        """Keep the finished sequence's blocks for prefix reuse and compact the slots."""
        if seq.slot is None:  # never admitted
            return
        if seq in self.prefilling:
            hole = self.prefilling.index(seq)
            self.prefilling.remove(seq)
            for later in self.prefilling[hole:]:
                self._move(later, later.slot - 1)
            return
        if seq.finish_reason != "abort" and self.config.prefix_cache_mb:
            self.prefix.store(seq.prefix_root, seq.all_ids[: seq.num_computed], self.cache, seq.slot)
        hole = self.decoding.index(seq)
        last = self.decoding.pop()
        if last is not seq:
            self._move(last, hole)
            self.decoding[hole] = last
        for waiting in self.prefilling:
            self._move(waiting, waiting.slot - 1)

    def stats(self) -> EngineStats:
        return EngineStats(
            running=len(self.decoding) + len(self.prefilling),
            waiting=len(self.waiting),
            prefix_hit_tokens=self.prefix.stats.hit_tokens,
            prefix_miss_tokens=self.prefix.stats.miss_tokens,
            prefix_blocks=len(self.prefix.blocks),
            prefix_bytes=self.prefix.num_bytes,
            kv_cache_bytes=self.cache.num_bytes,
            steps=self.steps,
            generated_tokens=self.generated_tokens,
        )

    def generate(self, prompts: list[list[int]], params: SamplingParams, adapters: list[str | None] | None = None) -> list[list[SequenceOutput]]:
        """Run prompts to completion (offline use, tests, benchmarks): every event per sequence."""
        adapters = adapters or [None] * len(prompts)
        ids = [f"offline-{next(self._offline_ids)}" for _ in prompts]
        for request_id, prompt, adapter in zip(ids, prompts, adapters):
            self.add_request(request_id, prompt, params, adapter)
        events: dict[str, list[SequenceOutput]] = {i: [] for i in ids}
        while self.has_work():
            for output in self.step():
                events[output.request_id].append(output)
        return [events[i] for i in ids]
