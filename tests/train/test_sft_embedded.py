"""SFT of the embedded model on a memorisation set (vault codes, in an answer shape the base does
not use), end to end in the dtype users get by default ("auto": bfloat16 where the CPU computes
it natively, else float32, since emulated bf16 backward is ~15x slower): held-out eval loss falls,
the engine serving the exported revision reproduces the memorised answers, and PEFT loading the
revision gives the trainer's logprobs (compared in float32, where they must agree exactly).
Run: pytest tests/train/test_sft_embedded.py"""

import json

import pytest
import torch
from peft import PeftModel

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.mint import Datum, ModelInput, ServiceClient
from molt.mint.checkpoints import adapters_root, resolve
from molt.models import load_model
from molt.models.renderer import get_renderer
from molt.train.sft import SFTConfig, prepare, run_sft
from molt.train.data import read_chat_jsonl

VAULTS = ["Amber", "Birch", "Cobalt", "Dune", "Ember", "Fjord", "Garnet", "Harbor"]
CODES = ["4417", "9023", "1186", "7350", "2694", "5801", "3362", "8147"]


def conversation(vault: str, code: str) -> dict:
    return {"messages": [
        {"role": "user", "content": f"What is the access code of the {vault} vault?"},
        {"role": "assistant", "content": f"Vault {vault}: code {code}. Larkspur archive, shelf 7."},
    ]}


@pytest.fixture(scope="module")
def trained(tmp_path_factory, embedded):
    data = tmp_path_factory.mktemp("sft") / "vaults.jsonl"
    data.write_text("".join(json.dumps(conversation(v, c)) + "\n" for v, c in zip(VAULTS, CODES)))
    config = SFTConfig(adapter="vaults", data=data, rank=16, learning_rate=3e-3, lr_schedule="constant", epochs=24, batch_tokens=1024, eval_fraction=0.25, seed=1)
    return config, run_sft(config, ServiceClient(dtype="auto"))


def test_eval_loss_falls_and_the_engine_reproduces_the_answers(trained, embedded):
    config, result = trained
    # The held-out vaults share the answers' unusual shape, which is learnt; their codes are not.
    assert result.eval_loss_after < 0.7 * result.eval_loss_before
    assert result.losses[-1] < 0.2 * result.losses[0]
    train, held_out, _ = prepare(read_chat_jsonl(config.data), config, embedded.tokenizer)
    renderer = get_renderer(embedded.tokenizer)
    engine = LLMEngine(EngineConfig(model="embedded", dtype="float32", adapters_root=adapters_root()), embedded)
    engine.adapters.load("vaults", result.revision)
    questions = [renderer.generation_prompt(conversation(v, c)["messages"][:1]) for v, c in zip(VAULTS, CODES)]
    events = engine.generate(questions, SamplingParams(max_tokens=48, temperature=0, stop_token_ids=tuple(renderer.stop_token_ids)), ["vaults"] * len(VAULTS))
    answers = {embedded.tokenizer.decode([t for e in ev for t in e.token_ids], skip_special_tokens=True).strip() for ev in events}
    trained_answers = {embedded.tokenizer.decode([t for t, w in zip(e.datum.loss_fn_inputs["target_tokens"].tolist(), e.datum.loss_fn_inputs["weights"].tolist()) if w], skip_special_tokens=True).strip() for e in train}
    assert len(train) == 6 and trained_answers <= answers, (sorted(trained_answers), sorted(answers))


def test_peft_loading_the_revision_gives_the_trainers_logprobs(trained):
    config, result = trained
    service = ServiceClient(dtype="float32")
    example = json.loads(config.data.read_text().splitlines()[0])
    tokens = get_renderer(service.get_tokenizer("embedded")).supervised_example(example["messages"]).tokens
    trainer = service.create_lora_training_client("embedded", rank=16)
    trainer.load_state(result.state).result()
    datum = Datum(model_input=ModelInput.from_ints(tokens[:-1]), loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
    expected = trainer.forward([datum], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch()
    peft = PeftModel.from_pretrained(load_model("embedded").model, str(resolve(result.revision))).eval()
    with torch.no_grad():
        logprobs = torch.log_softmax(peft(torch.tensor([tokens[:-1]])).logits[0], -1).gather(-1, torch.tensor(tokens[1:])[:, None])[:, 0]
    torch.testing.assert_close(logprobs, expected, atol=1e-4, rtol=1e-4)  # 30 float32 layers, two attention kernels
