"""Prefix cache: full blocks of K/V kept after a sequence leaves its slot, keyed by
(adapter revision, every token up to and including the block).

A conversation that comes back to the same adapter finds its earlier blocks and prefills only
the new tokens. Keys chain a hash through the blocks (as vLLM does), so a block matches only
when its whole prefix matches; the adapter revision is the root, because the same tokens under
another adapter have other K/V. Least-recently-used blocks are dropped beyond the byte budget.
"""

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import torch

from molt.engine.kv_cache import SlotKVCache


@dataclass
class PrefixStats:
    hit_tokens: int = 0
    miss_tokens: int = 0
    evicted_blocks: int = 0


class PrefixCache:
    def __init__(self, block_size: int = 16, budget_bytes: int = 512 * 2**20):
        self.block_size, self.budget_bytes = block_size, budget_bytes
        self.blocks: OrderedDict[bytes, tuple[torch.Tensor, torch.Tensor]] = OrderedDict()
        self.num_bytes = 0
        self.stats = PrefixStats()

    def _keys(self, root: str, tokens: list[int]) -> list[bytes]:
        keys, parent = [], root.encode()
        for start in range(0, len(tokens) - self.block_size + 1, self.block_size):
            block = tokens[start : start + self.block_size]
            parent = hashlib.blake2b(parent + b"|" + ",".join(map(str, block)).encode(), digest_size=16).digest()
            keys.append(parent)
        return keys

    def load(self, root: str, tokens: list[int], cache: SlotKVCache, slot: int) -> int:
        """Copy the longest cached prefix of ``tokens`` into ``slot``; returns its length in tokens.
        At least one token is always left to prefill, since the next token needs its logits."""
        hit = 0
        for key in self._keys(root, tokens[:-1]):
            entry = self.blocks.get(key)
            if entry is None:
                break
            self.blocks.move_to_end(key)
            cache.write_span(slot, hit, *entry)
            hit += self.block_size
        self.stats.hit_tokens += hit
        self.stats.miss_tokens += len(tokens) - hit
        return hit

    def store(self, root: str, tokens: list[int], cache: SlotKVCache, slot: int) -> None:
        """Keep every full block of ``tokens`` (whose K/V are in ``slot``) that is not kept yet."""
        for i, key in enumerate(self._keys(root, tokens)):
            if key in self.blocks:
                self.blocks.move_to_end(key)
                continue
            k, v = cache.read_span(slot, i * self.block_size, (i + 1) * self.block_size)
            self.blocks[key] = (k, v)
            self.num_bytes += 2 * k.numel() * k.element_size()
        while self.num_bytes > self.budget_bytes and self.blocks:
            _, (k, v) = self.blocks.popitem(last=False)
            self.num_bytes -= 2 * k.numel() * k.element_size()
            self.stats.evicted_blocks += 1

    def clear(self) -> None:
        self.blocks.clear()
        self.num_bytes = 0
