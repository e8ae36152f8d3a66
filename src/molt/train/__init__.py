"""Training recipes on the MinT API: supervised fine-tuning (``molt train sft``)."""
