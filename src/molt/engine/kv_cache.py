"""KV cache in slots: one row per running sequence, preallocated for ``max_len`` tokens.

Layout ``(layers, slots, kv_heads, max_len, head_dim)``. The scheduler keeps the decoding
sequences in slots ``0..n-1`` and the ones being prefilled in the slots after them, so a decode
step attends over the view ``[:n, :, :L]`` with no gather or copy; when a sequence leaves, the
last one is moved into its slot (copies per finished sequence, not per step).

Zero-initialised on purpose: attention masks unused positions, but a NaN left in uninitialised
memory would still poison ``softmax(scores) @ V`` (0 × NaN = NaN).
"""

import torch


class SlotKVCache:
    def __init__(self, num_layers: int, num_slots: int, num_kv_heads: int, max_len: int, head_dim: int, dtype: torch.dtype):
        shape = (num_layers, num_slots, num_kv_heads, max_len, head_dim)
        self.k = torch.zeros(shape, dtype=dtype)  # (layers, slots, kv_heads, max_len, head_dim)
        self.v = torch.zeros(shape, dtype=dtype)

    @property
    def num_bytes(self) -> int:
        return 2 * self.k.numel() * self.k.element_size()

    def write(self, layer: int, slot0: int, starts: list[int], k: torch.Tensor, v: torch.Tensor) -> None:
        """Store k, v (B, kv_heads, T, head_dim) of rows in slots slot0.. at their start positions:
        prefill chunks (T tokens per row) or a decode step (one token per row, one indexed write)."""
        B, _, T, _ = k.shape
        k, v = k.to(self.k.dtype), v.to(self.v.dtype)
        if T > 1 or B == 1:
            for b in range(B):
                self.k[layer, slot0 + b, :, starts[b] : starts[b] + T] = k[b]
                self.v[layer, slot0 + b, :, starts[b] : starts[b] + T] = v[b]
            return
        slots = torch.arange(slot0, slot0 + B)
        positions = torch.tensor(starts)
        self.k[layer, slots, :, positions] = k[:, :, 0]
        self.v[layer, slots, :, positions] = v[:, :, 0]

    def view(self, layer: int, slot0: int, rows: int, length: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Keys and values of slots slot0..slot0+rows, first ``length`` positions (no copy)."""
        return self.k[layer, slot0 : slot0 + rows, :, :length], self.v[layer, slot0 : slot0 + rows, :, :length]

    def move(self, src: int, dst: int, length: int) -> None:
        """Copy the first ``length`` positions of slot ``src`` into slot ``dst``, every layer."""
        if src != dst and length:
            self.k[:, dst, :, :length] = self.k[:, src, :, :length]
            self.v[:, dst, :, :length] = self.v[:, src, :, :length]

    def read_span(self, slot: int, start: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A copy of positions [start, end) of one slot, every layer: (layers, kv_heads, end-start, head_dim)."""
        return self.k[:, slot, :, start:end].clone(), self.v[:, slot, :, start:end].clone()

    def write_span(self, slot: int, start: int, k: torch.Tensor, v: torch.Tensor) -> None:
        """Inverse of ``read_span``: place saved positions back into a slot."""
        end = start + k.shape[2]
        self.k[:, slot, :, start:end] = k
        self.v[:, slot, :, start:end] = v
