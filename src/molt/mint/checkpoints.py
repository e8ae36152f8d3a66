"""Checkpoints of a training policy, and the hand-off of its weights to the engine.

- ``molt://<run>/<name>`` names a sampler revision: an immutable PEFT-format adapter folder under
  ``$MOLT_HOME/adapters/<run>/<name>``, inside the engine's default adapters root, so a running
  engine loads it by path without a restart. ``molt://<run>/state/<name>`` names a training state.
- A training state is the LoRA weights (safetensors), the AdamW moments (safetensors) and the
  rest as JSON: never pickle. Loading it with the optimizer reproduces the uninterrupted run.
- Revisions and states are written once: saving under an existing name is an error.
- The same checkpoints have Tinker's names too (``molt mint serve`` answers with them):
  ``tinker://<run>/sampler_weights/<name>`` and ``tinker://<run>/weights/<name>``.
"""

import json
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from molt.home import build_once, molt_home
from molt.jsonfile import read_json_object
from molt.lora.format import read_adapter, write_adapter
from molt.mint.backend import Policy

SCHEME = "molt://"
TINKER = "tinker://"


class CheckpointError(ValueError):
    """A checkpoint name or path that cannot be used."""


def adapters_root() -> Path:
    return molt_home() / "adapters"


def resolve(path: str) -> Path:
    """The folder behind a ``molt://`` or ``tinker://`` path (sampler revision or training state)."""
    path = molt_path(path)
    if not path.startswith(SCHEME):
        raise CheckpointError(f"{path!r} is not a molt:// or tinker:// path")
    parts = path[len(SCHEME) :].split("/")
    if len(parts) == 2 and all(parts):
        return _inside(adapters_root() / parts[0] / parts[1])
    if len(parts) == 3 and parts[1] == "state" and parts[0] and parts[2]:
        return _inside(molt_home() / "mint" / parts[0] / "state" / parts[2])
    raise CheckpointError(f"{path!r}: expected molt://<run>/<name> or molt://<run>/state/<name>")


def revision_path(revision: str) -> str:
    """An HCP's ``revision`` (``store/<hash>``, ``<run>/<name>`` or already a path) as the
    ``molt://`` path a training client starts from."""
    return revision if revision.startswith((SCHEME, TINKER)) else f"{SCHEME}{revision}"


def molt_path(path: str) -> str:
    """A ``tinker://`` checkpoint path in molt's spelling (other paths unchanged)."""
    if not path.startswith(TINKER):
        return path
    parts = path[len(TINKER) :].split("/")
    if len(parts) != 3 or parts[1] not in ("weights", "sampler_weights") or not all(parts):
        raise CheckpointError(f"{path!r}: expected tinker://<run>/weights/<name> or tinker://<run>/sampler_weights/<name>")
    run, kind, name = parts
    return f"{SCHEME}{run}/state/{name}" if kind == "weights" else f"{SCHEME}{run}/{name}"


def tinker_path(path: str) -> str:
    """A run's ``molt://`` checkpoint path in Tinker's spelling (registry store paths unchanged)."""
    if not path.startswith(SCHEME) or path.startswith(f"{SCHEME}store/"):
        return path
    parts = path[len(SCHEME) :].split("/")
    return f"{TINKER}{parts[0]}/weights/{parts[2]}" if len(parts) == 3 else f"{TINKER}{parts[0]}/sampler_weights/{parts[1]}"


def _inside(folder: Path) -> Path:
    root = molt_home().resolve()
    if not folder.resolve().is_relative_to(root) or any(part in ("..", ".") for part in folder.parts[-3:]):
        raise CheckpointError(f"checkpoint names must be plain names, got {folder.name!r}")
    return folder


def lora_weights(model, policy: Policy) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Base module name → (lora_A, scaling · lora_B) of one policy, in PEFT's layout."""
    weights = {}
    for name, module in model.named_modules():
        if hasattr(module, "lora_A") and policy.name in module.lora_A:
            A = module.lora_A[policy.name].weight.detach().clone()
            B = module.lora_B[policy.name].weight.detach() * module.scaling[policy.name]
            weights[name.removeprefix("base_model.model.")] = (A, B.clone())
    return weights


def save_sampler_weights(model, policy: Policy, base_model: str, run: str, name: str) -> str:
    path = f"{SCHEME}{run}/{name}"
    folder = resolve(path)
    weights = lora_weights(model, policy)
    built = build_once(folder, lambda tmp: write_adapter(tmp, weights, r=policy.config.rank, lora_alpha=policy.config.rank, base_model=base_model))
    if not built:
        raise CheckpointError(f"{path} exists; sampler revisions are immutable, save under a new name")
    return path


def save_state(model, policy: Policy, base_model: str, run: str, name: str) -> str:
    path = f"{SCHEME}{run}/state/{name}"
    folder = resolve(path)
    named = _named_parameters(model, policy)

    def build(tmp: Path) -> None:
        save_file({n: p.detach().contiguous() for n, p in named.items()}, tmp / "weights.safetensors")
        moments = {}
        for n, p in named.items():
            for key, value in policy.optimizer.state.get(p, {}).items():
                moments[f"{n}::{key}"] = value.detach().reshape(-1).contiguous() if key == "step" else value.detach().contiguous()
        save_file(moments, tmp / "optimizer.safetensors")
        meta = {"config": policy.config.model_dump(), "base_model": base_model, "steps": policy.steps, "parameters": list(named)}
        (tmp / "state.json").write_text(json.dumps(meta, indent=2))

    if not build_once(folder, build):
        raise CheckpointError(f"{path} exists; save under a new name")
    return path


def load_state(model, policy: Policy, path: str, with_optimizer: bool) -> None:
    folder = resolve(path)
    if not (folder / "state.json").is_file():
        raise CheckpointError(f"no training state at {path}")
    meta = read_json_object(folder / "state.json", CheckpointError)
    if meta["config"]["rank"] != policy.config.rank:
        raise CheckpointError(f"{path} has rank {meta['config']['rank']}; this client has rank {policy.config.rank}")
    named = _named_parameters(model, policy)
    if sorted(meta["parameters"]) != sorted(named):
        raise CheckpointError(f"{path} trains other modules than this client (compare train_attn/train_mlp/train_unembed)")
    weights = load_file(folder / "weights.safetensors")
    with torch.no_grad():
        for n, p in named.items():
            p.copy_(weights[n])
    policy.optimizer.state.clear()
    if with_optimizer:
        moments = load_file(folder / "optimizer.safetensors")
        for n, p in named.items():
            state = {key.split("::", 1)[1]: value for key, value in moments.items() if key.split("::", 1)[0] == n}
            if "step" in state:
                state["step"] = state["step"].reshape(())
            if state:
                policy.optimizer.state[p] = state
        policy.steps = meta["steps"]


def load_sampler_weights(model, policy: Policy, path: str) -> None:
    """A PEFT adapter's weights into this policy: lora_A as is, lora_B rescaled to the policy's
    scaling, so the policy computes exactly the adapter's delta. Modules the adapter does not
    target keep their fresh (zero-delta) initialisation; its rank must equal the policy's."""
    adapter = read_adapter(resolve(path))
    if adapter.r != policy.config.rank:
        raise CheckpointError(f"{path} has rank {adapter.r}; this client has rank {policy.config.rank}")
    modules = {name.removeprefix("base_model.model."): module for name, module in model.named_modules() if hasattr(module, "lora_A") and policy.name in module.lora_A}
    missing = sorted(set(adapter.weights) - set(modules))
    if missing:
        raise CheckpointError(f"{path} adapts {missing[0]}, which this client does not train (compare train_attn/train_mlp/train_unembed)")
    with torch.no_grad():
        for name, (A, B) in adapter.weights.items():
            module = modules[name]
            module.lora_A[policy.name].weight.copy_(A)
            module.lora_B[policy.name].weight.copy_(B * adapter.scaling / module.scaling[policy.name])
    policy.optimizer.state.clear()


def _named_parameters(model, policy: Policy) -> dict[str, torch.nn.Parameter]:
    """Policy parameters by a name that does not depend on the policy's own adapter name."""
    return {n.replace(f".{policy.name}.", ".policy."): p for n, p in model.named_parameters() if f".{policy.name}." in n and "lora_" in n}


def list_checkpoints(run: str) -> list[tuple[str, str, Path]]:
    """A run's saved checkpoints as (Tinker kind, name, folder): ``weights`` for training states,
    ``sampler_weights`` for sampler revisions."""
    states, samplers = resolve(f"{SCHEME}{run}/state/x").parent, resolve(f"{SCHEME}{run}/x").parent
    found = [("weights", f.name, f) for f in sorted(states.iterdir()) if (f / "state.json").is_file()] if states.is_dir() else []
    found += [("sampler_weights", f.name, f) for f in sorted(samplers.iterdir()) if (f / "adapter_config.json").is_file()] if samplers.is_dir() else []
    return found
