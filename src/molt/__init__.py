"""molt: one frozen base model, specialist LoRA adapters, a routing proxy, and a loop that
turns deployment experience into the next (model, harness) version."""

__version__ = "0.1.0"
