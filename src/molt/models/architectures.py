"""The base-model architectures molt loads, serves and trains, keyed by Hugging Face ``model_type``.

An architecture is listed here only when every part of molt (loader, engine, trainer) handles it;
anything else is refused up front with a message that lists these.
"""

from molt.models.errors import UnsupportedArchitectureError

SUPPORTED: dict[str, str] = {
    "llama": "LlamaForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
}
SPARSE_MOE = ("qwen3_moe",)
"""Sparse-MoE architectures (``qwen3_moe``): LoRA trains attention and the unembedding; the experts and their
router stay frozen, and RL can replay the routing the engine recorded (``molt.mint.routing``)."""


def check_model_type(model_type: str | None, where: str) -> str:
    """Return ``model_type`` if supported, else raise naming the supported ones."""
    if model_type not in SUPPORTED:
        raise UnsupportedArchitectureError(
            f"{where}: architecture {model_type!r} is not supported; "
            f"molt supports {', '.join(sorted(SUPPORTED))}"
        )
    return model_type
