"""LongStraw: a group of datums that share a long prompt trains with the prompt computed once.

In group RL every completion of a problem repeats the problem's prompt (history, tool schemas,
documents). The plain path packs all of them, so activation memory grows with group size × prompt
length. LongStraw runs the shared prefix once under ``no_grad``, keeps each layer's keys and values
(``Prefix``), then replays one response at a time with autograd on top of them: forward, loss,
backward, graph freed, gradients accumulated. Peak memory is then the prefix's KV plus one
response's graph, flat in the group size.

By default the prompt is *detached*: no gradient reaches the LoRA weights through the prompt's
keys and values. The gradient then equals plain backprop with the prompt's K/V detached (the
reference, ``molt_detached`` in ``molt.mint.packed``), not full backprop; ``molt bench
longstraw`` reports both cosines. ``exact`` closes the gap: the prompt's K/V are leaves that sum
each response's gradient on them, and one more pass through the prompt, with autograd and its
layers checkpointed, carries that sum to the LoRA weights. That is full backprop's gradient for
one extra prompt forward and backward, with memory still flat in the group size. Only a prefix that carries no loss is shared, so every position
whose logprob enters the loss keeps its full gradient path through the response.

When (``LongStraw.mode``):
    auto  datums sharing at least ``min_prefix`` tokens, two or more of them (a group)
    on    every datum over any shared loss-free prefix, even alone (one long prompt, one answer)
    off   the plain packed path always
Datums carrying routing replay (sparse-MoE bases), and every datum on a sparse-attention base (its
indexer picks the attended positions), take the plain path.

A very long response also fits: beyond ``checkpoint_from`` tokens the decoder layers run under
activation checkpointing and the logits are computed and freed chunk by chunk (the plain path
does the same past that many tokens in one call). With ``reuse_steps`` > 0 a prefix is kept and
reused for that many optimizer steps when the same prompt comes back; its K/V were then computed
with older adapter weights, and ``longstraw_prefix_staleness:max`` says by how many steps.
"""

import contextlib
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class LongStraw:
    mode: str = "auto"
    min_prefix: int = 512
    """Shared tokens that make a group worth it (auto)."""
    checkpoint_from: int = 4096
    """Tokens with a graph in one forward beyond which layers are checkpointed."""
    reuse_steps: int = 0
    """How many optimizer steps old a kept prefix's K/V may be when reused; 0: computed afresh every call."""
    kept_prefixes: int = 2
    exact: bool = False
    """Also carry the gradient through the prompt: the responses' gradients w.r.t. its K/V are
    summed, then one checkpointed pass through the prompt takes them to the LoRA weights. The
    gradient is full backprop's; memory is one prompt's checkpointed graph, still flat in G."""

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"LongStraw mode is one of {', '.join(MODES)}, not {self.mode!r}")
        if self.min_prefix < 1 or self.checkpoint_from < 1 or self.reuse_steps < 0:
            raise ValueError("LongStraw min_prefix and checkpoint_from must be ≥ 1 and reuse_steps ≥ 0")
        if self.exact and self.reuse_steps:
            raise ValueError("exact LongStraw recomputes the prompt with the current weights; it cannot reuse a stale one (reuse_steps=0)")


@dataclass(frozen=True)
class SharedPrefix:
    members: list[int]
    """Indices of the datums in the request."""
    length: int


def common_prefix(sequences: list[list[int]]) -> int:
    first, n = sequences[0], min(len(s) for s in sequences)
    for i in range(n):
        if any(s[i] != first[i] for s in sequences[1:]):
            return i
    return n


def plan(tokens: list[list[int]], loss_starts: list[int], settings: LongStraw) -> tuple[list[SharedPrefix], list[int]]:
    """Which datums share a prefix (and how long), and which take the plain path.

    ``loss_starts[i]``: datum i's first position that enters the loss; a shared prefix stops
    before it, and before each datum's last position (every member keeps a response)."""
    if settings.mode == "off":
        return [], list(range(len(tokens)))
    threshold, smallest = (1, 1) if settings.mode == "on" else (settings.min_prefix, 2)
    room = [min(start, len(t) - 1) for t, start in zip(tokens, loss_starts)]
    buckets: dict[tuple[int, ...], list[int]] = defaultdict(list)
    rest = []
    for i, t in enumerate(tokens):
        (buckets[tuple(t[:threshold])] if room[i] >= threshold else rest).append(i)
    groups = []
    for bucket in buckets.values():
        for members in _split(sorted(bucket, key=lambda m: tokens[m][: room[m]]), tokens, room):
            if len(members) < smallest:
                rest += members
                continue
            length = min(common_prefix([tokens[m] for m in members]), *(room[m] for m in members))
            groups.append(SharedPrefix(members, length))
    return groups, sorted(rest)


def _split(members: list[int], tokens: list[list[int]], room: list[int]) -> list[list[int]]:
    """Members sorted by their loss-free tokens, cut where neighbours share only the run's shortest
    prefix, as long as every piece keeps two members: problems that share a system prompt, each
    with its group of responses, become one group per problem, each sharing its whole prompt."""
    if len(members) < 4:
        return [members]
    shared = [min(common_prefix([tokens[a], tokens[b]]), room[a], room[b]) for a, b in zip(members, members[1:])]
    cuts = [i + 1 for i, n in enumerate(shared) if n == min(shared)]
    pieces = [members[a:b] for a, b in zip([0, *cuts], [*cuts, len(members)])]
    if len(pieces) == 1 or min(map(len, pieces)) < 2:
        return [members]
    return [group for piece in pieces for group in _split(piece, tokens, room)]


class Prefix:
    """A prompt's per-layer keys and values (post-RoPE, no autograd), and its last hidden states.

    The attention hook (``molt.mint.packed.packed_attention``) calls ``attend``: while recording it
    stores each layer's K/V and attends causally; afterwards a response's queries attend to the
    stored K/V followed by the response's own, causally aligned at the bottom right."""

    def __init__(self, tokens: list[int], step: int, keep_graph: bool = False):
        self.tokens, self.step, self.keep_graph = tokens, step, keep_graph
        self.keys: dict[int, torch.Tensor] = {}
        self.values: dict[int, torch.Tensor] = {}
        self.hidden: torch.Tensor | None = None
        self.recording = True
        self.grads: dict[int, torch.Tensor] = {}
        """Exact mode: each K/V leaf's gradient (by id) summed over the responses, in float32."""

    def __len__(self) -> int:
        return len(self.tokens)

    def attend(self, module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scaling: float | None) -> torch.Tensor:
        layer = module.layer_idx
        if self.recording:
            self.keys[layer], self.values[layer] = (key, value) if self.keep_graph else (key.detach(), value.detach())
            out = F.scaled_dot_product_attention(query, key, value, is_causal=True, scale=scaling, enable_gqa=True)
        else:
            key, value = torch.cat([self.keys[layer], key], 2), torch.cat([self.values[layer], value], 2)
            mask = causal_lower_right(query.shape[2], key.shape[2])
            out = F.scaled_dot_product_attention(query, key, value, attn_mask=mask, scale=scaling, enable_gqa=True)
        return out.transpose(1, 2)  # (1, N, H, D), as transformers expects


@contextlib.contextmanager
def checkpointed(causal_lm, on: bool):
    """Activation checkpointing of every decoder layer for the duration (non-reentrant, so the
    prefix and the segment lengths pass through as keyword arguments)."""
    if not on:
        yield
        return
    training = causal_lm.training
    causal_lm.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    causal_lm.train()  # transformers checkpoints only in training mode; no dropout is active in LoRA here
    try:
        yield
    finally:
        causal_lm.activation_checkpointing_disable()
        causal_lm.disable_input_require_grads()  # enabling added an embedding hook that disabling leaves under PEFT
        causal_lm.train(training)


def _hidden(causal_lm, prefix: Prefix, tokens: list[int], start: int) -> torch.Tensor:
    """The decoder's last hidden states (len(tokens), d) of ``tokens`` at positions from ``start``,
    attending through ``prefix`` (recording it, or on top of it)."""
    positions = torch.arange(start, start + len(tokens))[None]
    return causal_lm.get_decoder()(input_ids=torch.tensor([tokens]), position_ids=positions, molt_prefix=prefix, use_cache=False).last_hidden_state[0]


def run_prefix(causal_lm, tokens: list[int], step: int, exact: bool = False) -> Prefix:
    """The prompt without autograd. ``exact``: its K/V become leaves that sum the responses' gradients."""
    prefix = Prefix(tokens, step)
    with torch.no_grad():
        prefix.hidden = _hidden(causal_lm, prefix, tokens, 0)
    prefix.recording = False
    if exact:
        for t in [*prefix.keys.values(), *prefix.values.values()]:
            t.requires_grad_(True)
            t.register_post_accumulate_grad_hook(lambda leaf: _sum_in_float32(prefix, leaf))
    return prefix


def _sum_in_float32(prefix: Prefix, leaf: torch.Tensor) -> None:
    """Move a response's gradient on a bf16 K/V leaf into a float32 sum (G bf16 additions lose bits)."""
    total = prefix.grads.get(id(leaf))
    prefix.grads[id(leaf)] = leaf.grad.float() if total is None else total.add_(leaf.grad)
    leaf.grad = None


def backprop_prefix(causal_lm, prefix: Prefix) -> None:
    """Exact mode, after every response: the prompt once more with autograd (layers checkpointed),
    and its K/V backpropagated with the gradients the responses summed on them."""
    again = Prefix(prefix.tokens, prefix.step, keep_graph=True)
    with checkpointed(causal_lm, True):
        _hidden(causal_lm, again, again.tokens, 0)
    pairs = [(again.keys[layer], prefix.keys[layer]) for layer in sorted(prefix.keys)]
    pairs += [(again.values[layer], prefix.values[layer]) for layer in sorted(prefix.values)]
    pairs = [(output, prefix.grads[id(leaf)].to(output.dtype)) for output, leaf in pairs if id(leaf) in prefix.grads]
    prefix.grads.clear()
    if pairs:
        torch.autograd.backward([output for output, _ in pairs], [grad for _, grad in pairs])


def response_hidden(causal_lm, prefix: Prefix, tokens: list[int]) -> torch.Tensor:
    """The response's last hidden states (len(tokens), d), with autograd, attending to the prefix."""
    return _hidden(causal_lm, prefix, tokens, len(prefix))


class PrefixCache:
    """Prefixes kept across optimizer steps (``reuse_steps``), newest last, per policy."""

    def __init__(self, settings: LongStraw):
        self.settings = settings
        self.kept: OrderedDict[tuple[str, int], Prefix] = OrderedDict()

    def get(self, policy: str, tokens: list[int], step: int) -> Prefix | None:
        key = (policy, hash(tuple(tokens)))
        prefix = self.kept.get(key)
        if prefix is None or prefix.tokens != tokens or not 0 <= step - prefix.step <= self.settings.reuse_steps:
            return None  # a negative age: the policy's state was loaded since
        self.kept.move_to_end(key)
        return prefix

    def put(self, policy: str, prefix: Prefix) -> None:
        if self.settings.reuse_steps:
            self.kept[(policy, hash(tuple(prefix.tokens)))] = prefix
            while len(self.kept) > self.settings.kept_prefixes:
                self.kept.popitem(last=False)

    def forget(self, policy: str) -> None:
        for key in [k for k in self.kept if k[0] == policy]:
            del self.kept[key]
