"""The local MinT backend: one resident base model, several LoRA policies trained on it.

- The base is loaded once per base-model name and frozen. Each training client is one PEFT
  adapter on it with its own AdamW state; PEFT's active-adapter switch makes a forward use, and a
  backward reach, only that client's LoRA weights.
- Gradients accumulate across ``forward_backward`` calls until ``optim_step`` (which applies
  ``AdamParams`` as given for that step, then zeroes them).
- A batch of datums runs as one packed row (``molt.mint.packed``): no padding, attention inside
  each datum. Each datum's loss is computed on its own positions and the losses are summed, as
  Tinker defines them.
- Sparse-MoE and sparse-attention bases: datums may carry the sampler's routing, which the
  forward replays (R3, ``molt.mint.routing``); LoRA never touches experts, routers or indexers.
- Datums that share a long prompt (an RL group) take the LongStraw path (``molt.mint.longstraw``):
  the prompt once without autograd, then one response at a time on top of it, so memory stays
  flat in the group size. Past ``LongStraw.checkpoint_from`` tokens, layers are checkpointed.
- In bfloat16 the frozen base is stored in bf16 and the forward runs under autocast, while the
  LoRA weights, their gradients and AdamW's moments stay float32 (mixed precision); float32
  gives exact, reproducible runs.
"""

import contextlib
import threading
import warnings
from dataclasses import dataclass, field

import torch
from peft import LoraConfig as PeftLoraConfig
from peft import PeftModel, get_peft_model
from peft.helpers import disable_input_dtype_casting

from molt.mint.losses import check_inputs, loss_start, mismatch_metrics, resolve_loss
from molt.mint import longstraw, packed, routing
from molt.mint.longstraw import LongStraw, Prefix, SharedPrefix
from molt.mint.types import AdamParams, Datum, ForwardBackwardOutput, LoraConfig, TensorData
from molt.models import LoadedModel, load_model
from molt.models.moe import moe_routers
from molt.models.sparse_attention import sparse_indexers

# PEFT asks transformers 5 a question under its deprecated name; the answer is the same.
warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
# PEFT warns that a LoRA on a tied unembedding complicates merging it into the base; molt never
# merges (the engine, vLLM and SGLang apply the adapter beside the frozen base).
warnings.filterwarnings("ignore", message=".*tie_word_embeddings=True.*", category=UserWarning)

INTEGER_INPUTS = ("target_tokens", *routing.INTEGER_INPUTS)
ATTENTION, MLP = ["q_proj", "k_proj", "v_proj", "o_proj"], ["gate_proj", "up_proj", "down_proj"]


def target_modules(config: LoraConfig, moe: bool = False) -> list[str]:
    """PEFT target modules. On a sparse-MoE base no MLP gets LoRA (molt's engine serves the experts
    without it, so the policy would differ from what is served): ``train_mlp`` adds nothing there."""
    mlp = MLP if config.train_mlp and not moe else []
    targets = (ATTENTION if config.train_attn else []) + mlp + (["lm_head"] if config.train_unembed else [])
    if not targets:
        also = " (on a sparse-MoE base train_mlp adds nothing: LoRA trains attention and the unembedding there)" if moe else ""
        raise ValueError(f"LoraConfig trains nothing: enable at least one of train_attn, train_mlp, train_unembed{also}")
    return targets


def loss_inputs(datum: Datum) -> dict[str, torch.Tensor]:
    """A datum's ``loss_fn_inputs`` as tensors: token and routing ids as integers, the rest float32."""
    return {k: v.to_torch() if k in INTEGER_INPUTS else v.to_torch().float() for k, v in datum.loss_fn_inputs.items()}


@dataclass
class Policy:
    name: str
    config: LoraConfig
    optimizer: torch.optim.AdamW
    steps: int = 0
    parameters: list[torch.nn.Parameter] = field(default_factory=list)


class LocalBackend:
    """A resident base and the policies trained on it. Thread-safe: one lock around the model."""

    def __init__(self, base_model: str, dtype: torch.dtype = torch.float32, loaded: LoadedModel | None = None, long_context: LongStraw = LongStraw()):
        if dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"MinT trains in float32 or bfloat16, not {dtype}")
        self.base_model, self.dtype = base_model, dtype
        self.loaded = loaded or load_model(base_model)
        self.loaded.model.to(dtype).requires_grad_(False)
        self.loaded.model.set_attn_implementation(packed.ATTENTION)
        self.tokenizer = self.loaded.tokenizer
        self.routers = moe_routers(self.loaded.model)
        self.indexers = sparse_indexers(self.loaded.model)
        self.model: PeftModel | None = None
        self.policies: dict[str, Policy] = {}
        self.lock = threading.Lock()
        self.long_context = long_context
        self.prefixes = longstraw.PrefixCache(long_context)

    def create_policy(self, name: str, config: LoraConfig) -> Policy:
        peft_config = PeftLoraConfig(r=config.rank, lora_alpha=config.rank, target_modules=target_modules(config, bool(self.routers)), lora_dropout=0.0)
        with self.lock, torch.random.fork_rng(devices=[]):
            if config.seed is not None:
                torch.manual_seed(config.seed)
            if self.model is None:
                self.model = get_peft_model(self.loaded.model, peft_config, adapter_name=name)
            else:
                self.model.add_adapter(name, peft_config)
            parameters = [p for n, p in self.model.named_parameters() if f".{name}." in n and "lora_" in n]
            for p in parameters:
                p.data = p.data.float()  # master weights stay float32 whatever the base dtype
                p.requires_grad_(True)
            optimizer = torch.optim.AdamW(parameters, lr=AdamParams().learning_rate)
            policy = Policy(name, config, optimizer, parameters=parameters)
            self.policies[name] = policy
        return policy

    def _activate(self, policy: Policy):
        """Make ``policy`` the adapter forwards use; return the transformers model under PEFT."""
        self.model.set_adapter(policy.name)
        for p in policy.parameters:  # set_adapter may freeze; this policy's weights always learn
            p.requires_grad_(True)
        return self.model.get_base_model()

    def _logprobs(
        self, policy: Policy, tokens: list[list[int]], targets: torch.Tensor, grad: bool,
        replay: contextlib.AbstractContextManager = contextlib.nullcontext(), forward_kwargs: dict | None = None,
    ) -> list[torch.Tensor]:  # fmt: skip
        """Logprob of each sequence's target tokens (``targets``: all of them, concatenated) under the
        policy: one (T_i,) tensor per sequence. ``replay`` and ``forward_kwargs``: the routing
        replay's (``molt.mint.routing.prepare``)."""
        causal_lm = self._activate(policy)
        routed = forward_kwargs or not isinstance(replay, contextlib.nullcontext)  # a recompute would route afresh
        long = grad and not routed and sum(map(len, tokens)) > self.long_context.checkpoint_from
        with torch.set_grad_enabled(grad), self._precision(), replay, longstraw.checkpointed(causal_lm, long):
            hidden = causal_lm.get_decoder()(**packed.packed_inputs(tokens), **(forward_kwargs or {})).last_hidden_state[0]  # (N, hidden)
            logprobs = packed.target_logprobs(causal_lm.get_output_embeddings(), hidden, targets, checkpointed=long)
        return list(logprobs.split([len(t) for t in tokens]))

    def _shared_prefix(self, policy: Policy, group: SharedPrefix, tokens: list[list[int]], inputs: list[dict], loss, config: dict, grad: bool, logprobs: list) -> tuple[torch.Tensor, Prefix]:
        """LongStraw on one group: the prefix once (or kept from an earlier step), then each
        member's response with autograd, its loss backpropagated and its graph freed before the next."""
        causal_lm, n = self._activate(policy), group.length
        lm_head, prompt = causal_lm.get_output_embeddings(), tokens[group.members[0]][:n]
        with self._precision(), torch.no_grad():
            prefix = self.prefixes.get(policy.name, prompt, policy.steps)
            if prefix is None:
                prefix = longstraw.run_prefix(causal_lm, prompt, policy.steps, exact=grad and self.long_context.exact)
                self.prefixes.put(policy.name, prefix)
            heads = torch.stack([inputs[m]["target_tokens"][:n].long() for m in group.members], 1)
            before = packed.target_logprobs(lm_head, prefix.hidden, heads).unbind(1)  # one logits pass for the group
        total = torch.zeros(())
        for member, head in zip(group.members, before):
            response = tokens[member][n:]
            long = grad and n + len(response) > self.long_context.checkpoint_from  # its graph would hold every layer's K/V
            with torch.set_grad_enabled(grad), self._precision(), longstraw.checkpointed(causal_lm, long):
                hidden = longstraw.response_hidden(causal_lm, prefix, response)
                tail = packed.target_logprobs(lm_head, hidden, inputs[member]["target_tokens"][n:].long(), checkpointed=long)
                logprobs[member] = torch.cat([head, tail])
                value = loss(logprobs[member], inputs[member], config)
            if grad:
                value.backward()
            logprobs[member] = logprobs[member].detach()  # the graph's nodes would keep ~100 MB each alive at 8K
            total += value.detach()
        if grad and self.long_context.exact:
            with self._precision():
                longstraw.backprop_prefix(causal_lm, prefix)
        return total, prefix

    def _precision(self):
        if self.dtype == torch.float32:
            return contextlib.nullcontext()
        stack = contextlib.ExitStack()
        stack.enter_context(torch.autocast("cpu", dtype=self.dtype))
        stack.enter_context(disable_input_dtype_casting(self.model))  # LoRA runs in bf16 under autocast, no float32 copies of x
        return stack

    def forward_backward(self, policy: Policy, data: list[Datum], loss_fn: str, config: dict | None, backward: bool = True) -> ForwardBackwardOutput:
        if not data:
            raise ValueError("forward_backward needs at least one Datum")
        fn, required, config = resolve_loss(loss_fn, config)
        inputs = [loss_inputs(d) for d in data]
        for datum, datum_inputs in zip(data, inputs):
            check_inputs(loss_fn, required, datum_inputs, datum.model_input.length)
            routing.check_routing(datum_inputs, datum.model_input.length, self.routers, self.indexers)
        replay, forward_kwargs = routing.prepare(inputs, self.routers, self.indexers)
        tokens = [d.model_input.to_ints() for d in data]
        if self.indexers or any(key in inputs[0] for key in routing.ROUTING_INPUTS):  # replay and indexers need one packed row
            shared, plain = [], list(range(len(data)))
        else:
            shared, plain = longstraw.plan(tokens, [loss_start(d, config) for d in inputs], self.long_context)
        with self.lock, self._grads_kept_on_failure(policy, backward):
            return self._forward_backward(policy, inputs, tokens, shared, plain, fn, loss_fn, config, backward, replay, forward_kwargs)

    @contextlib.contextmanager
    def _grads_kept_on_failure(self, policy: Policy, backward: bool):
        """A call that fails halfway (one group backpropagated, the next out of memory) leaves the
        accumulated gradients as they were before it, so a retry does not count a part twice."""
        before = [None if p.grad is None else p.grad.clone() for p in policy.parameters] if backward else []
        try:
            yield
        except BaseException:
            for p, grad in zip(policy.parameters, before):
                p.grad = grad
            raise

    def _forward_backward(
        self, policy: Policy, inputs: list[dict], tokens: list[list[int]], shared: list[SharedPrefix], plain: list[int],
        loss, loss_fn: str, config: dict, backward: bool, replay: contextlib.AbstractContextManager, forward_kwargs: dict,
    ) -> ForwardBackwardOutput:  # fmt: skip
        """The plain datums as one packed row, then each LongStraw group; outputs in request order."""
        logprobs: list[torch.Tensor] = [torch.empty(0)] * len(inputs)
        total, metrics = torch.zeros(()), {}
        if plain:
            targets = torch.cat([inputs[i]["target_tokens"].long() for i in plain])
            for i, lp in zip(plain, self._logprobs(policy, [tokens[i] for i in plain], targets, backward, replay, forward_kwargs)):
                logprobs[i] = lp
            part = sum(loss(logprobs[i], inputs[i], config) for i in plain)
            if backward:
                part.backward()
            total += part.detach()
        prefixes = []
        for group in shared:
            part, prefix = self._shared_prefix(policy, group, tokens, inputs, loss, config, backward, logprobs)
            total += part
            prefixes.append(prefix)
        if shared:
            metrics = {
                "longstraw_groups:sum": float(len(shared)),
                "longstraw_prefix_tokens:sum": float(sum(group.length for group in shared)),
                "longstraw_prefix_staleness:max": float(max(policy.steps - prefix.step for prefix in prefixes)),
            }
        return ForwardBackwardOutput(
            loss_fn_output_type=loss_fn,
            loss_fn_outputs=[{"logprobs": TensorData.from_torch(lp.detach())} for lp in logprobs],
            metrics={"loss:sum": float(total)} | metrics | mismatch_metrics(logprobs, inputs, config),
        )

    def optim_step(self, policy: Policy, params: AdamParams) -> dict[str, float]:
        with self.lock:
            norm = torch.nn.utils.clip_grad_norm_(policy.parameters, params.grad_clip_norm or float("inf"))
            for group in policy.optimizer.param_groups:
                group.update(lr=params.learning_rate, betas=(params.beta1, params.beta2), eps=params.eps, weight_decay=params.weight_decay)
            policy.optimizer.step()
            policy.optimizer.zero_grad(set_to_none=True)
            policy.steps += 1
        return {"grad_norm": float(norm), "step": float(policy.steps)}
