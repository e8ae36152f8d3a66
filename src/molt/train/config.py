"""What one SFT run trains: its own module, light to import, so ``molt train sft --help`` reads
the fields' docs without loading the trainer."""

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from molt.models.renderer import TrainOn


class SFTConfig(BaseModel):
    model_config = ConfigDict(use_attribute_docstrings=True)

    adapter: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
    """Name of the adapter to train (letters, digits, '_', '-', '.')."""
    data: Path
    """OpenAI-style chat JSONL: one {"messages": [...], "tools": [...]} per line."""
    base_model: str = "embedded"
    """Base model to train on."""
    rank: int = Field(16, ge=1)
    """LoRA rank (all attention and MLP projections)."""
    train_unembed: bool = True
    """Also adapt the unembedding (lm_head), as Tinker does by default."""
    learning_rate: float = Field(2e-4, gt=0)
    """Peak AdamW learning rate."""
    lr_schedule: Literal["linear", "constant"] = "linear"
    """'linear' decays to 0 at the last step."""
    epochs: int = Field(1, ge=1)
    """Passes over the training split."""
    max_steps: int | None = Field(None, ge=1)
    """Stop after this many optimizer steps (default: all epochs)."""
    batch_tokens: int = Field(2048, ge=8)
    """Tokens per optimizer step; whole examples are packed into it."""
    max_length: int = Field(1024, ge=8)
    """Examples are cut to this many tokens."""
    eval_fraction: float = Field(0.1, ge=0, lt=1)
    """Share of examples held out for the eval loss."""
    eval_every: int = Field(0, ge=0)
    """Evaluate every N steps (0: before and after training only)."""
    save_every: int = Field(50, ge=1)
    """Save a resumable checkpoint every N steps."""
    seed: int = 0
    """Seeds the split, the data order and the LoRA initialisation."""
    train_on: TrainOn = "all_assistant"
    """Which assistant turns carry weight: all, or the last of each conversation."""
    init_from: str | None = None
    """Start from this adapter revision's weights (a ``molt://`` path; its rank must be ``rank``)
    instead of a fresh LoRA: how ``molt evolve`` trains a specialist's next revision."""
