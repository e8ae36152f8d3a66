"""LoRA adapters: the PEFT file format, adapter files under a root, and mixed-adapter batches."""
