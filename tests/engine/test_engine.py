"""The engine loop: equivalence with transformers and PEFT, mixed batches, prefix cache, sampling
parameters, aborts and adapter reloads. Run: pytest tests/engine/test_engine.py"""

import pytest
import torch
from peft import PeftModel

from conftest import ADAPTERS, tiny_engine, tokens
from molt.engine.adapters import AdapterNotFound
from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine, RequestError
from molt.engine.sampler import SamplingParams, sample
from molt.lora.synthetic import write_random_adapter
from molt.models import load_model

QUESTIONS = ["What is the capital of France?", "Name three colors.", "Write a haiku about rain.", "What is 2+2?"]
GREEDY = SamplingParams(max_tokens=12, temperature=0)


def prompts(engine) -> list[list[int]]:
    return [engine.renderer.generation_prompt([{"role": "user", "content": q}]) for q in QUESTIONS]


def hf_greedy(model, prompt: list[int], max_tokens: int = 12) -> list[int]:
    x = torch.tensor([prompt])
    out = model.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=max_tokens, do_sample=False, eos_token_id=2, pad_token_id=2)
    return out[0, len(prompt) :].tolist()


@pytest.mark.embedded
def test_base_greedy_equals_transformers(embedded_engine, embedded):
    for prompt in prompts(embedded_engine)[:3]:
        assert tokens(embedded_engine.generate([prompt], GREEDY)[0]) == hf_greedy(embedded.model, prompt)


@pytest.mark.embedded
@pytest.mark.parametrize("name", ["a1", "a3"])
def test_adapter_greedy_equals_peft(embedded_engine, adapters_root, name):
    """PEFT with only this adapter loaded is the reference. The adapter must also change the
    output, so equality cannot come from the LoRA path being skipped."""
    peft = PeftModel.from_pretrained(load_model("embedded").model, str(adapters_root / name)).eval()
    changed = 0
    for prompt in prompts(embedded_engine):
        ours = tokens(embedded_engine.generate([prompt], GREEDY, [name])[0])
        assert ours == hf_greedy(peft, prompt)
        changed += ours != tokens(embedded_engine.generate([prompt], GREEDY)[0])
    assert changed >= 2


@pytest.mark.embedded
def test_mixed_batch_equals_one_at_a_time(embedded_engine):
    """Rows of four adapters and the base in one batch, finishing at different steps (so slots are
    compacted mid-run), each produce exactly what they produce alone."""
    batch_prompts = [p for p in prompts(embedded_engine) for _ in range(2)]
    adapters = [None, "a0", "a1", "a2", "a3", "a0", None, "a2"]
    lengths = [12, 5, 9, 12, 3, 12, 7, 10]
    engine = embedded_engine
    for prompt, adapter, length in zip(batch_prompts, adapters, lengths):
        engine.add_request(f"mix-{len(prompt)}-{adapter}-{length}", prompt, SamplingParams(max_tokens=length, temperature=0), adapter)
    mixed: dict[str, list[int]] = {}
    while engine.has_work():
        for out in engine.step():
            mixed.setdefault(out.request_id, []).extend(out.token_ids)
    for prompt, adapter, length in zip(batch_prompts, adapters, lengths):
        alone = tokens(engine.generate([prompt], SamplingParams(max_tokens=length, temperature=0), [adapter])[0])
        assert mixed[f"mix-{len(prompt)}-{adapter}-{length}"] == alone


def test_seeded_sampling_is_the_same_alone_and_batched(tiny_root):
    engine = tiny_engine(tiny_root)
    params = SamplingParams(max_tokens=10, temperature=1.0, top_p=0.9, top_k=50, seed=7)
    prompt = prompts(engine)[0]
    alone = tokens(engine.generate([prompt], params, ["a1"])[0])
    batch = engine.generate([prompts(engine)[1], prompt, prompt], params, ["a0", "a1", None])
    assert tokens(batch[1]) == alone
    assert tokens(batch[2]) != alone  # same seed, no adapter: the adapter matters


def test_chunked_prefill_gives_the_same_tokens(tiny_root):
    whole = tiny_engine(tiny_root, max_prefill_chunk=512, prefix_cache_mb=0)
    chunked = tiny_engine(tiny_root, max_prefill_chunk=4, prefix_cache_mb=0)
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=1)
    for prompt in prompts(whole):
        assert tokens(whole.generate([prompt], params, ["a2"])[0]) == tokens(chunked.generate([prompt], params, ["a2"])[0])


def test_prefix_cache_prefills_only_new_tokens(tiny_root):
    """A conversation that returns to the same adapter reuses its K/V: the second turn's cached
    tokens cover the first turn, and the output equals a cold engine's."""
    engine = tiny_engine(tiny_root)
    cold = tiny_engine(tiny_root, prefix_cache_mb=0)
    first = prompts(engine)[2]
    params = SamplingParams(max_tokens=6, temperature=0)
    answer = tokens(engine.generate([first], params, ["a0"])[0])
    second = first + answer + engine.tokenizer.encode("\n<|im_start|>user\nMore please.<|im_end|>\n<|im_start|>assistant\n")
    before = engine.stats()
    events = engine.generate([second], params, ["a0"])[0]
    after = engine.stats()
    cached = events[-1].num_cached_tokens
    assert cached >= len(first) - engine.config.prefix_block_size and cached % engine.config.prefix_block_size == 0
    assert after.prefix_hit_tokens - before.prefix_hit_tokens == cached
    assert after.prefix_miss_tokens - before.prefix_miss_tokens == len(second) - cached
    assert tokens(events) == tokens(cold.generate([second], params, ["a0"])[0])
    other = engine.generate([second], params, ["a1"])[0]
    assert other[-1].num_cached_tokens == 0  # the same tokens under another adapter have other K/V


def test_prefix_cache_evicts_least_recently_used(tiny_root):
    engine = tiny_engine(tiny_root, prefix_cache_mb=1)
    block_bytes = 2 * 2 * 2 * engine.config.prefix_block_size * 16 * 4  # k+v, layers, kv heads, tokens, dim, fp32
    for i in range(40):
        engine.generate([list(range(100 + i * 300, 100 + i * 300 + 200))], SamplingParams(max_tokens=1, temperature=0))
    assert engine.prefix.num_bytes <= engine.prefix.budget_bytes
    assert engine.prefix.stats.evicted_blocks > 0 and len(engine.prefix.blocks) * block_bytes == engine.prefix.num_bytes


def test_logprobs_and_prompt_logprobs_match_a_full_forward(tiny_root):
    engine = tiny_engine(tiny_root)
    prompt = prompts(engine)[3]
    params = SamplingParams(max_tokens=6, temperature=1.0, seed=3, logprobs=True, prompt_logprobs=True)
    events = engine.generate([prompt], params, ["a3"])[0]
    generated = tokens(events)
    peft = PeftModel.from_pretrained(load_model("tiny").model, str(tiny_root / "a3")).eval()
    with torch.no_grad():
        logprobs = torch.log_softmax(peft(torch.tensor([prompt + generated])).logits[0], -1)
    sequence = prompt + generated
    expected = [logprobs[i - 1, sequence[i]].item() for i in range(1, len(sequence))]
    assert events[0].prompt_logprobs[0] is None
    torch.testing.assert_close(torch.tensor(events[0].prompt_logprobs[1:]), torch.tensor(expected[: len(prompt) - 1]), atol=1e-4, rtol=0)
    got = [lp for e in events for lp in e.logprobs]
    torch.testing.assert_close(torch.tensor(got), torch.tensor(expected[len(prompt) - 1 :]), atol=1e-4, rtol=0)


def test_logprobs_only_for_the_rows_that_ask_in_a_shared_batch():
    """The sampler skips the vocabulary-wide log-softmax for rows that did not ask; a row that
    asks gets the same logprobs alone as beside rows that do not."""
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    asks, silent = SamplingParams(temperature=0, logprobs=True), SamplingParams(temperature=0)
    tokens, logprobs = sample(logits, [silent, asks, silent], [None] * 3)
    assert tokens == logits.argmax(-1).tolist()
    assert logprobs[0] is None and logprobs[2] is None
    assert logprobs[1] == pytest.approx(torch.log_softmax(logits[1], -1)[tokens[1]].item(), abs=1e-6)
    assert sample(logits[1:2], [asks], [None])[1] == pytest.approx([logprobs[1]], abs=1e-6)


def test_stop_strings_stop_tokens_length_and_n(tiny_root):
    engine = tiny_engine(tiny_root)
    prompt = prompts(engine)[0]
    free = engine.generate([prompt], SamplingParams(max_tokens=20, temperature=1.0, seed=5), ["a0"])[0]
    text = "".join(e.text for e in free)
    assert free[-1].finish_reason == "length" and len(tokens(free)) == 20
    stop = text[len(text) // 2 : len(text) // 2 + 3]
    cut = engine.generate([prompt], SamplingParams(max_tokens=20, temperature=1.0, seed=5, stop=(stop,)), ["a0"])[0]
    assert "".join(e.text for e in cut) == text[: text.index(stop)] and cut[-1].finish_reason == "stop"
    stop_token = tokens(free)[4]
    by_token = engine.generate([prompt], SamplingParams(max_tokens=20, temperature=1.0, seed=5, stop_token_ids=(stop_token,)), ["a0"])[0]
    assert tokens(by_token) == tokens(free)[: tokens(free).index(stop_token) + 1] and by_token[-1].finish_reason == "stop"
    many = engine.generate([prompt], SamplingParams(max_tokens=8, temperature=1.0, seed=5, n=3), ["a0"])[0]
    samples = {i: [t for e in many if e.index == i for t in e.token_ids] for i in range(3)}
    assert len({tuple(s) for s in samples.values()}) == 3 and all(len(s) == 8 for s in samples.values())


def test_abort_frees_the_slot_and_leaves_others_intact(tiny_root):
    engine = tiny_engine(tiny_root)
    params = SamplingParams(max_tokens=12, temperature=0)
    p = prompts(engine)
    for i, adapter in enumerate(ADAPTERS):
        engine.add_request(f"r{i}", p[i], params, adapter)
    got: dict[str, list] = {}
    for _ in range(30):
        if len(engine.decoding) == 4:
            break
        for out in engine.step():
            got.setdefault(out.request_id, []).append(out)
    engine.abort("r1")
    while engine.has_work():
        for out in engine.step():
            got.setdefault(out.request_id, []).append(out)
    assert got["r1"][-1].finish_reason == "abort" and engine.decoding == [] and engine.prefilling == []
    for i in (0, 2, 3):
        assert tokens(got[f"r{i}"]) == tokens(engine.generate([p[i]], params, [ADAPTERS[i]])[0])


def test_reload_is_atomic_for_running_requests(tiny_root, tmp_path):
    """A request that started on revision 1 finishes on revision 1 although the name is reloaded
    with other weights mid-generation; the next request uses revision 2."""
    engine = tiny_engine(tiny_root)
    prompt = prompts(engine)[1]
    params = SamplingParams(max_tokens=10, temperature=0)
    old_alone = tokens(engine.generate([prompt], params, ["a0"])[0])
    engine.add_request("running", prompt, params, "a0")
    events = list(engine.step()) + list(engine.step())
    write_random_adapter(tiny_root / "a0-new", load_model("tiny").model, "tiny", r=4, seed=99, std=0.3)
    assert engine.adapters.load("a0", "a0-new").revision > 4
    while engine.has_work():
        events += engine.step()
    assert tokens(events) == old_alone
    assert tokens(engine.generate([prompt], params, ["a0"])[0]) != old_alone


def test_bad_requests_are_refused(tiny_root):
    engine = tiny_engine(tiny_root)
    with pytest.raises(RequestError, match="empty"):
        engine.add_request("x", [], GREEDY)
    with pytest.raises(RequestError, match="max_model_len is 512"):
        engine.add_request("x", [1] * 600, GREEDY)
    with pytest.raises(RequestError, match=r"token ids must be in \[0, 49152\)"):
        engine.add_request("x", [1, 10**6], GREEDY)
    with pytest.raises(AdapterNotFound):
        engine.add_request("x", [1, 2], GREEDY, "missing")
    with pytest.raises(ValueError, match="invalid top_p"):
        SamplingParams(top_p=0)
    assert not engine.has_work()


def test_prefill_rows_with_different_starts_share_one_forward(tiny_root):
    """One prompt resumes after a prefix-cache hit (start > 0), another starts cold, a third is
    short and padded: all three are prefilled in the same forward and each produces exactly what
    a cold engine produces for it alone."""
    engine, cold = tiny_engine(tiny_root), tiny_engine(tiny_root, prefix_cache_mb=0)
    p = prompts(engine)
    params = SamplingParams(max_tokens=5, temperature=0)
    engine.generate([p[0]], params, ["a1"])
    resumed = p[0] + engine.tokenizer.encode(" Tell me more about it, please.")
    batch = [(resumed, "a1"), (p[2], "a2"), (p[3][:9], None)]
    for i, (prompt, adapter) in enumerate(batch):
        engine.add_request(f"row{i}", prompt, params, adapter)
    events: dict[str, list] = {}
    for out in engine.step():
        events.setdefault(out.request_id, []).append(out)
    assert len(engine.decoding) == 3  # all three finished prefill in the first step
    while engine.has_work():
        for out in engine.step():
            events.setdefault(out.request_id, []).append(out)
    assert events["row0"][-1].num_cached_tokens > 0
    for i, (prompt, adapter) in enumerate(batch):
        assert tokens(events[f"row{i}"]) == tokens(cold.generate([prompt], params, [adapter])[0])


def test_qwen3_adapter_greedy_equals_peft(tmp_path):
    """The second architecture end to end: a Qwen3 engine (q/k norms) with an adapter matches PEFT,
    and the adapter changes the output."""
    from molt.engine.config import EngineConfig
    from molt.engine.engine import LLMEngine

    base = load_model("tiny:qwen3", seed=5)
    write_random_adapter(tmp_path / "q", base.model, "tiny:qwen3", r=4, seed=2, std=0.5)
    engine = LLMEngine(EngineConfig(model="tiny:qwen3", dtype="float32", adapters_root=tmp_path, lora_modules={"q": "q"}), load_model("tiny:qwen3", seed=5))
    peft = PeftModel.from_pretrained(load_model("tiny:qwen3", seed=5).model, str(tmp_path / "q")).eval()
    for prompt in prompts(engine)[:2]:
        ours = tokens(engine.generate([prompt], GREEDY, ["q"])[0])
        assert ours == hf_greedy(peft, prompt)
        assert ours != tokens(engine.generate([prompt], GREEDY)[0])


def test_parallel_samples_share_the_prompts_prefill(tiny):
    """n = 4: the first sample prefills the prompt, the other three find it in the prefix cache;
    each sample draws what it draws without sharing (same seeds, same tokens and logprobs)."""
    prompt = list(range(300, 400))
    params = SamplingParams(max_tokens=8, temperature=1.0, seed=7, n=4, logprobs=True)
    results = []
    for cache_mb in (512, 0):
        engine = LLMEngine(EngineConfig(model="tiny", dtype="float32", prefix_cache_mb=cache_mb), load_model("tiny"))  # an engine owns its model
        [events] = engine.generate([prompt], params)
        results.append({i: ([t for e in events if e.index == i for t in e.token_ids], [lp for e in events if e.index == i for lp in e.logprobs]) for i in range(4)})
        if cache_mb:
            assert engine.stats().prefix_hit_tokens == 3 * 96  # three samples reuse the six full blocks of the first
    for i in range(4):
        assert results[0][i][0] == results[1][i][0]
        assert results[0][i][1] == pytest.approx(results[1][i][1], abs=1e-4)
