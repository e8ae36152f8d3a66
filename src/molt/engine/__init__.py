"""molt engine: one frozen base, many LoRA adapters, continuous batching, served over the OpenAI API."""
