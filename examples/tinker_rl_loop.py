"""A minimal RL loop written for Tinker (the tinker-cookbook's rl_loop shape), run on molt.

It uses the `tinker` SDK only: each step saves the weights for the sampler, samples a group of
answers per problem, scores them, centres the rewards within each group, and trains with
``forward_backward(..., "importance_sampling")`` and ``optim_step``. Nothing in it knows molt:
point ``TINKER_BASE_URL`` at ``molt mint serve`` and it trains there.

    molt mint serve --base embedded --api-key tml-local &
    TINKER_BASE_URL=http://127.0.0.1:8002 TINKER_API_KEY=tml-local TINKER_TELEMETRY=0 \\
        python examples/tinker_rl_loop.py

The task is verifiable arithmetic ("What is 7 + 4?"), rewarded 1 when the last number of the answer
is the sum. Training problems have even sums; the held-out problems, scored greedily before and
after training, have odd ones: no answer is shared.
"""

import argparse
import random
import re
import time

import tinker
from tinker import types

QUESTION = "What is {a} + {b}?"


def problems(count: int, seed: int, held_out: bool) -> list[tuple[int, int]]:
    """Single-digit sums: even ones for training, odd ones held out (no answer in both)."""
    rng = random.Random(seed)
    found: list[tuple[int, int]] = []
    while len(found) < count:
        a, b = rng.randint(1, 9), rng.randint(1, 9)
        if (a + b) % 2 == held_out:
            found.append((a, b))
    return found


def reward(text: str, a: int, b: int) -> float:
    """1 when the answer's last number is the sum ("7 + 4 = 11" and "11" both count)."""
    numbers = re.findall(r"-?\d+", text)
    return 1.0 if numbers and int(numbers[-1]) == a + b else 0.0


def prompt_tokens(tokenizer, a: int, b: int) -> list[int]:
    messages = [{"role": "user", "content": QUESTION.format(a=a, b=b)}]
    text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    return tokenizer.encode(text, add_special_tokens=False)


def accuracy(service: tinker.ServiceClient, path: str, tokenizer, held_out: list[tuple[int, int]], stop: list[int]) -> float:
    """Greedy accuracy of the weights saved at ``path`` on the held-out problems."""
    sampler = service.create_sampling_client(model_path=path).result()
    greedy = types.SamplingParams(max_tokens=16, temperature=0.0, stop=stop)
    futures = [sampler.sample(types.ModelInput.from_ints(prompt_tokens(tokenizer, a, b)), 1, greedy) for a, b in held_out]
    answers = [tokenizer.decode(f.result().sequences[0].tokens, skip_special_tokens=True) for f in futures]
    return sum(reward(text, a, b) for text, (a, b) in zip(answers, held_out)) / len(held_out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-model", default="embedded")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--batch", type=int, default=8, help="problems per step")
    parser.add_argument("--group-size", type=int, default=8, help="samples per problem")
    parser.add_argument("--lr", type=float, default=2e-4)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--held-out", type=int, default=64, help="held-out problems scored before and after")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    service = tinker.ServiceClient()  # TINKER_BASE_URL, TINKER_API_KEY
    training = service.create_lora_training_client(base_model=args.base_model, rank=args.rank, seed=args.seed).result()
    tokenizer = training.get_tokenizer()
    stop = [tokenizer.eos_token_id]
    train, held_out = problems(args.steps * args.batch, args.seed, False), problems(args.held_out, 10_000 + args.seed, True)
    sampling = types.SamplingParams(max_tokens=args.max_tokens, temperature=1.0, stop=stop)
    adam = types.AdamParams(learning_rate=args.lr, beta1=0.9, beta2=0.95, eps=1e-8)

    first = training.save_weights_for_sampler(name="step-0").result().path
    before = accuracy(service, first, tokenizer, held_out, stop)
    print(f"held-out accuracy before: {before:.3f} ({len(held_out)} problems, greedy)")
    for step in range(args.steps):
        started = time.time()
        path = first if step == 0 else training.save_weights_for_sampler(name=f"step-{step}").result().path
        sampler = service.create_sampling_client(model_path=path).result()
        batch = train[step * args.batch : (step + 1) * args.batch]
        prompts = [prompt_tokens(tokenizer, a, b) for a, b in batch]
        futures = [sampler.sample(types.ModelInput.from_ints(p), args.group_size, sampling) for p in prompts]

        data, rewards = [], []
        for prompt, (a, b), future in zip(prompts, batch, futures):
            sequences = future.result().sequences
            scores = [reward(tokenizer.decode(s.tokens, skip_special_tokens=True), a, b) for s in sequences]
            rewards.extend(scores)
            mean = sum(scores) / len(scores)
            if all(score == mean for score in scores):
                continue  # nothing to learn from a group whose answers all scored alike
            for sequence, score in zip(sequences, scores):
                tokens = prompt + sequence.tokens
                observed = len(prompt) - 1  # positions that predict prompt tokens carry no weight
                data.append(types.Datum(
                    model_input=types.ModelInput.from_ints(tokens[:-1]),
                    loss_fn_inputs={
                        "target_tokens": tokens[1:],
                        "logprobs": [0.0] * observed + list(sequence.logprobs),
                        "advantages": [0.0] * observed + [score - mean] * len(sequence.tokens),
                    },
                ))  # fmt: skip
        if data:
            update = training.forward_backward(data, loss_fn="importance_sampling")
            stepped = training.optim_step(adam)
            update.result(), stepped.result()
        print(f"step {step + 1:3d}/{args.steps}  reward {sum(rewards) / len(rewards):.3f}  trained on {len(data):3d} samples  {time.time() - started:5.1f} s")

    last = training.save_weights_for_sampler(name="final").result().path
    after = accuracy(service, last, tokenizer, held_out, stop)
    print(f"held-out accuracy after:  {after:.3f} (before {before:.3f})")
    print(f"final weights: {last}")


if __name__ == "__main__":
    main()
