"""The training forward: a batch of sequences packed into one row, no padding in the matmuls.

Every projection and MLP runs on the concatenated tokens (N, hidden). Only attention needs the
sequence boundaries: it is registered with transformers as the ``molt_packed`` implementation,
pads the segments into (S, H, L, D), and attends causally inside each segment, so no token sees
another sequence. On 2 CPU cores this explicit bf16 attention is ~1.8x faster, forward plus
backward, than SDPA's CPU flash kernel at these lengths, and packing avoids both the padded
matmuls and the dense (N, N) mask that transformers builds for packed position ids.
"""

import torch
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.checkpoint import checkpoint
from transformers import AttentionInterface
from transformers.masking_utils import AttentionMaskInterface

from molt.models.sparse_attention import attended_mask

ATTENTION = "molt_packed"
LOGIT_CHUNK = 128
"""Rows of logits materialised at once in float32. 128 rows of a 49k vocabulary are 25 MB, under
glibc's largest mmap threshold (32 MB): the allocator reuses the buffers instead of faulting in
fresh pages for every chunk, which made 1024-row chunks ~1.3x slower per step."""
SDPA_FROM = 2048
"""Segments longer than this attend through SDPA's memory-efficient causal kernel instead: the
explicit (L, L) scores of an 8K segment are 2.4 GB a layer."""


def packed_attention(
    module, query, key, value, attention_mask, dropout: float = 0.0, scaling: float | None = None,
    molt_lengths=None, molt_sparse_positions=None, molt_sparse_replayable=None, molt_prefix=None, molt_detached=None, **kwargs,
):  # fmt: skip
    """query (1, H, N, D), key/value (1, Hkv, N, D) → (1, N, H, D), attending within each segment.
    A sparse-attention layer attends where its indexer points, or where the sampler's recorded
    positions say (``molt_sparse_positions`` (N, sparse layers, top_k), on the replayable rows).
    ``molt_prefix``: LongStraw's shared prompt state does the attending (``molt.mint.longstraw``).
    ``molt_detached`` (N,) bool: those rows' keys and values pass no gradient (LongStraw's reference)."""
    if molt_prefix is not None:
        return molt_prefix.attend(module, query, key, value, scaling), None
    if molt_lengths is None:
        raise ValueError("the molt_packed attention needs molt_lengths (segment lengths) in the forward kwargs")
    if molt_detached is not None:
        rows = molt_detached[None, None, :, None]
        key, value = torch.where(rows, key.detach(), key), torch.where(rows, value.detach(), value)
    indexer = getattr(module, "indexer", None)
    if indexer is None and max(molt_lengths) > SDPA_FROM:
        spans = zip(query.split(molt_lengths, 2), key.split(molt_lengths, 2), value.split(molt_lengths, 2))
        outs = [F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scaling, enable_gqa=True) for q, k, v in spans]
        return torch.cat(outs, 2).transpose(1, 2), None

    def segments(x: torch.Tensor) -> torch.Tensor:  # (1, h, N, D) → (S, h, L, D), zero-padded at the end
        return pad_sequence(x[0].transpose(0, 1).split(molt_lengths), batch_first=True).transpose(1, 2)

    q, k, v = segments(query), segments(key), segments(value)
    S, H, L, D = q.shape
    Hkv = k.shape[1]
    G = H // Hkv
    # Query heads h = kv·G + g share kv head `kv`: fold the G heads into the rows of one matmul.
    scores = (q.reshape(S, Hkv, G * L, D) @ k.transpose(-1, -2)).float() * (scaling or D**-0.5)
    allowed = torch.ones(L, L, dtype=torch.bool, device=q.device).tril().expand(S, L, L)
    if indexer is not None:
        with torch.no_grad():
            chosen = indexer.select(q, k, allowed)  # (S, L, top_k)
            if molt_sparse_positions is not None:
                rows = lambda x, pad: pad_sequence(x.split(molt_lengths), batch_first=True, padding_value=pad)
                keep = rows(molt_sparse_replayable, False)[..., None]
                chosen = torch.where(keep, rows(molt_sparse_positions[:, indexer.slot], -1), chosen)
        allowed = allowed & attended_mask(chosen, L)
    probs = scores.view(S, Hkv, G, L, L).masked_fill(~allowed[:, None, None], float("-inf")).softmax(-1).to(q.dtype)
    out = (probs.view(S, Hkv, G * L, L) @ v).view(S, H, L, D).transpose(1, 2)  # (S, L, H, D)
    # Padded rows sit after each segment's last token, so causal rows never read them.
    return torch.cat([out[i, :n] for i, n in enumerate(molt_lengths)])[None], None


AttentionInterface.register(ATTENTION, packed_attention)
AttentionMaskInterface.register(ATTENTION, lambda *args, **kwargs: None)  # segments replace the mask


def packed_inputs(sequences: list[list[int]]) -> dict:
    """Forward kwargs for the decoder body: one row of all tokens, positions restarting per sequence."""
    lengths = [len(s) for s in sequences]
    return {
        "input_ids": torch.tensor([[t for s in sequences for t in s]]),
        "position_ids": torch.cat([torch.arange(n) for n in lengths])[None],
        "molt_lengths": lengths,
        "use_cache": False,
    }


def _chunk_logprobs(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = lm_head(hidden).float()
    return logits.gather(-1, targets) - logits.logsumexp(-1, keepdim=True)


def target_logprobs(lm_head: torch.nn.Module, hidden: torch.Tensor, targets: torch.Tensor, checkpointed: bool = False) -> torch.Tensor:
    """log p(target_i | prefix) for every row of ``hidden`` (N, d); logits in float32, by chunks.
    ``targets`` (N,), or (N, k) for k targets per row scored on the same logits. ``checkpointed``:
    each chunk's logits are freed after use and recomputed in the backward (long sequences)."""
    columns = targets.view(len(targets), -1)
    out = []
    for start in range(0, len(targets), LOGIT_CHUNK):
        rows = (lm_head, hidden[start : start + LOGIT_CHUNK], columns[start : start + LOGIT_CHUNK])
        out.append(checkpoint(_chunk_logprobs, *rows, use_reentrant=False) if checkpointed else _chunk_logprobs(*rows))
    return torch.cat(out).view(targets.shape)
