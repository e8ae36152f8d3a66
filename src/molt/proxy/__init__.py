"""The Mixture-of-LoRA proxy: route → answer → summary per user turn (DESIGN §1.2)."""
