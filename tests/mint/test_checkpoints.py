"""Training states and sampler revisions: exact resume, and hand-off to PEFT and the engine.
Run: pytest tests/mint/test_checkpoints.py"""

import pytest
import torch
from peft import PeftModel

from molt.engine.config import EngineConfig
from molt.engine.engine import LLMEngine
from molt.engine.sampler import SamplingParams
from molt.mint import AdamParams
from molt.mint.checkpoints import CheckpointError, adapters_root, resolve
from molt.models import load_model
from test_backend import datum

ADAM = AdamParams(learning_rate=1e-2, weight_decay=0.01, grad_clip_norm=1.0)


def train(client, steps: int) -> list[float]:
    losses = []
    for _ in range(steps):
        losses.append(client.forward_backward([datum("cross_entropy")], "cross_entropy").result().metrics["loss:sum"])
        client.optim_step(ADAM).result()
    return losses


def test_resume_with_optimizer_reproduces_the_uninterrupted_run(service):
    """Save after 3 steps, run 3 more; a new client resumed from the save must produce exactly
    the same 3 losses (CPU, float32). Resuming weights only must not: Adam's moments matter."""
    original = service.create_lora_training_client("tiny", rank=4, seed=11)
    train(original, 3)
    path = original.save_state("after-3").result()
    assert path.startswith("molt://") and "/state/" in path
    expected = train(original, 3)
    resumed = service.create_lora_training_client("tiny", rank=4, seed=99)
    resumed.load_state_with_optimizer(path).result()
    assert train(resumed, 3) == expected
    weights_only = service.create_lora_training_client("tiny", rank=4, seed=98)
    weights_only.load_state(path).result()
    losses = train(weights_only, 3)
    assert losses[0] == expected[0] and losses[1:] != expected[1:]


def test_sampler_revision_loads_in_peft_and_the_engine_with_the_trainers_logprobs(service):
    client = service.create_lora_training_client("tiny", rank=4, seed=12)
    train(client, 5)
    path = client.save_weights_for_sampler("rev1").result()
    folder = resolve(path)
    assert path == f"molt://{client.model_id}/rev1" and (folder / "adapter_config.json").is_file()
    d = datum("cross_entropy")
    trainer = client.forward([d], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch()
    tokens, targets = d.model_input.to_ints(), d.loss_fn_inputs["target_tokens"].to_torch()
    peft = PeftModel.from_pretrained(load_model("tiny").model, str(folder)).eval()
    with torch.no_grad():
        peft_logprobs = torch.log_softmax(peft(torch.tensor([tokens])).logits[0], -1).gather(-1, targets[:, None])[:, 0]
    torch.testing.assert_close(peft_logprobs, trainer, atol=1e-5, rtol=1e-5)
    engine = LLMEngine(EngineConfig(model="tiny", dtype="float32", adapters_root=adapters_root()), load_model("tiny"))
    engine.adapters.load("trained", str(folder.relative_to(adapters_root())))
    sequence = tokens + [int(targets[-1])]
    events = engine.generate([sequence], SamplingParams(max_tokens=1, prompt_logprobs=True), ["trained"])[0]
    torch.testing.assert_close(torch.tensor(events[0].prompt_logprobs[1:]), trainer, atol=1e-4, rtol=1e-4)


def test_revisions_are_immutable_and_paths_are_checked(service):
    client = service.create_lora_training_client("tiny", rank=2, seed=13)
    client.save_weights_for_sampler("once").result()
    with pytest.raises(CheckpointError, match="immutable"):
        client.save_weights_for_sampler("once").result()
    for bad in ("tinker://x/y", "molt://run", "molt://run/../../etc", "molt://../x/state/y"):
        with pytest.raises(CheckpointError):
            resolve(bad)
    with pytest.raises(CheckpointError, match="no training state"):
        client.load_state("molt://nobody/state/nothing").result()
    other = service.create_lora_training_client("tiny", rank=8, seed=14)
    state = other.save_state("r8").result()
    with pytest.raises(CheckpointError, match="rank 8; this client has rank 2"):
        client.load_state(state).result()


def test_a_new_client_starts_from_a_saved_revisions_weights(service):
    """``load_weights``: a fresh client given a PEFT revision computes the trainer's logprobs
    (RL continues from a specialist SFT made); a revision of another rank is refused."""
    client = service.create_lora_training_client("tiny", rank=4, seed=13)
    train(client, 4)
    path = client.save_weights_for_sampler("start").result()
    d = datum("cross_entropy")
    expected = client.forward([d], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch()
    fresh = service.create_lora_training_client("tiny", rank=4, seed=77)
    assert not torch.allclose(fresh.forward([d], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch(), expected)
    fresh.load_weights(path).result()
    torch.testing.assert_close(fresh.forward([d], "cross_entropy").result().loss_fn_outputs[0]["logprobs"].to_torch(), expected, atol=1e-6, rtol=1e-6)
    with pytest.raises(Exception, match="has rank 4; this client has rank 8"):
        service.create_lora_training_client("tiny", rank=8).load_weights(path).result()
