"""PEFT's LoRA adapter format: ``adapter_config.json`` + ``adapter_model.safetensors``.

The unit that crosses from training to serving. molt reads what PEFT writes (any rank and alpha,
rsLoRA scaling, any subset of the base's linear layers, the unembedding included) and refuses
what it cannot serve exactly (trained embeddings, biases, DoRA) with a message naming the field.
Shapes are checked against the base model before an adapter is accepted.
"""

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from molt.jsonfile import read_json_object

CONFIG_FILE = "adapter_config.json"
WEIGHTS_FILE = "adapter_model.safetensors"
_KEY = re.compile(r"^base_model\.model\.(?P<module>.+)\.lora_(?P<AB>[AB])(?:\.default)?\.weight$")


class AdapterError(ValueError):
    """An adapter folder that cannot be served: missing, corrupt, unsupported or wrong shapes."""


@dataclass(frozen=True)
class LoraAdapter:
    name: str
    path: Path
    r: int
    lora_alpha: float
    scaling: float
    """``lora_alpha / r``, or ``lora_alpha / sqrt(r)`` with rsLoRA."""
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]]
    """Base module name (e.g. ``model.layers.0.self_attn.q_proj``) → (lora_A (r, in), lora_B (out, r))."""

    @property
    def num_bytes(self) -> int:
        return sum(a.numel() * a.element_size() + b.numel() * b.element_size() for a, b in self.weights.values())


def read_adapter(path: Path, name: str | None = None) -> LoraAdapter:
    """Read a PEFT LoRA adapter folder, checking the config and every tensor name."""
    config = _read_config(path)
    try:
        tensors = load_file(path / WEIGHTS_FILE)
    except FileNotFoundError:
        raise AdapterError(f"{path}: no {WEIGHTS_FILE}") from None
    except (SafetensorError, OSError) as e:
        raise AdapterError(f"{path / WEIGHTS_FILE}: not a readable safetensors file ({e})") from e
    pairs: dict[str, dict[str, torch.Tensor]] = {}
    for key, tensor in tensors.items():
        match = _KEY.match(key)
        if match is None:
            raise AdapterError(f"{path}: tensor {key!r} is not a LoRA A/B weight (molt serves LoRA on linear layers only)")
        pairs.setdefault(match["module"], {})[match["AB"]] = tensor
    weights = {}
    for module, ab in sorted(pairs.items()):
        if set(ab) != {"A", "B"}:
            raise AdapterError(f"{path}: {module} has lora_{''.join(ab)} but not both lora_A and lora_B")
        weights[module] = (ab["A"], ab["B"])
    if not weights:
        raise AdapterError(f"{path}: {WEIGHTS_FILE} holds no LoRA weights")
    r, alpha = int(config["r"]), float(config.get("lora_alpha", config["r"]))
    scaling = alpha / math.sqrt(r) if config.get("use_rslora") else alpha / r
    return LoraAdapter(name or path.name, path, r, alpha, scaling, weights)


def _read_config(path: Path) -> dict:
    file = path / CONFIG_FILE
    if not path.is_dir():
        raise AdapterError(f"no adapter folder at {path}")
    if not file.is_file():
        raise AdapterError(f"{path}: no {CONFIG_FILE} (expected a PEFT LoRA adapter folder)")
    config = read_json_object(file, AdapterError)
    if config.get("peft_type", "LORA") != "LORA":
        raise AdapterError(f"{file}: peft_type must be 'LORA'")
    if not isinstance(config.get("r"), int) or config["r"] <= 0:
        raise AdapterError(f"{file}: 'r' must be a positive integer")
    for field, allowed in (("bias", (None, "none")), ("use_dora", (None, False)), ("modules_to_save", (None, []))):
        if config.get(field) not in allowed:
            raise AdapterError(f"{file}: {field}={config[field]!r} is not supported (molt serves plain LoRA)")
    return config


def check_against_base(adapter: LoraAdapter, base: torch.nn.Module) -> None:
    """Raise AdapterError unless every LoRA pair fits a linear layer of ``base``."""
    modules = dict(base.named_modules())
    for module, (A, B) in adapter.weights.items():
        linear = modules.get(module)
        if not isinstance(linear, torch.nn.Linear):
            raise AdapterError(f"adapter {adapter.name!r}: base model has no linear layer {module!r}")
        expected_a, expected_b = (adapter.r, linear.in_features), (linear.out_features, adapter.r)
        if tuple(A.shape) != expected_a or tuple(B.shape) != expected_b:
            raise AdapterError(
                f"adapter {adapter.name!r}: {module} has lora_A {tuple(A.shape)} and lora_B {tuple(B.shape)}, "
                f"the base needs {expected_a} and {expected_b} (was it trained on another base?)"
            )


def write_adapter(
    path: Path,
    weights: dict[str, tuple[torch.Tensor, torch.Tensor]],
    r: int,
    lora_alpha: float,
    base_model: str,
    use_rslora: bool = False,
) -> Path:
    """Write an adapter folder that PEFT, vLLM and molt all load."""
    path.mkdir(parents=True, exist_ok=True)
    targets = sorted({module.rsplit(".", 1)[-1] for module in weights})
    config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base_model,
        "r": r,
        "lora_alpha": lora_alpha,
        "use_rslora": use_rslora,
        "target_modules": targets,
        "lora_dropout": 0.0,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
    }
    (path / CONFIG_FILE).write_text(json.dumps(config, indent=2))
    tensors = {}
    for module, (A, B) in weights.items():
        tensors[f"base_model.model.{module}.lora_A.weight"] = A.contiguous()
        tensors[f"base_model.model.{module}.lora_B.weight"] = B.contiguous()
    save_file(tensors, path / WEIGHTS_FILE, metadata={"format": "pt"})
    return path
