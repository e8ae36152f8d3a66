"""The ``coding`` family: small Python functions, each with tests its reference solution passes.

A task kind is a function to write (several possible names, one signature), its reference
code, and how to draw inputs; some kinds take a constant stated in the request ("greater than
7"). The tests are the reference's own outputs on drawn inputs, so a reference always passes;
an answer's first code block is run against them in ``molt.harness.substrate.function_tests``.

- ``train``: 18 kinds.
- ``heldout``: 12 other kinds, with their own function names: never trained on.
- ``wording``: the train kinds and names, asked with held-out templates.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from molt.families.base import Case, Family, Message, Recipe, Split, fill, rng_for
from molt.harness.substrate.function_tests import run_tests

WORDS = ["apple", "river", "stone", "level", "music", "tiger", "noon", "cloud", "orange", "paper", "radar", "lemon"]
CODE_BLOCK = re.compile(r"```(?:python|py)?\s*\n(.*?)```", re.DOTALL)


def int_list(rng) -> list[int]:
    return [rng.randint(-20, 50) for _ in range(rng.randint(3, 7))]


def text(rng) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))


def mixed_case(rng) -> str:
    return " ".join(rng.choice([w, w.upper(), w.capitalize()]) for w in text(rng).split())


@dataclass(frozen=True)
class Task:
    names: list[str]
    params: str
    train: list[str]
    heldout: list[str]
    """What the function does, as a clause after "it" ("returns ..."), per template set."""
    code: str
    """The reference body, with {name} and any {k}."""
    inputs: Callable
    """rng → argument tuple."""
    constant: tuple[int, int] | None = None


TRAIN_TASKS = [
    Task(["sum_evens", "even_total"], "nums", ["returns the sum of the even numbers in nums"], ["adds up only the even values of the list nums"],
         "def {name}(nums):\n    return sum(x for x in nums if x % 2 == 0)", lambda r: (int_list(r),)),
    Task(["reverse_string", "backwards"], "s", ["returns the string s reversed"], ["gives back the characters of s in reverse order"],
         "def {name}(s):\n    return s[::-1]", lambda r: (text(r),)),
    Task(["count_vowels", "vowel_count"], "s", ["returns how many vowels (a, e, i, o, u) are in s"], ["counts the vowels a, e, i, o and u in s"],
         "def {name}(s):\n    return sum(1 for c in s.lower() if c in \"aeiou\")", lambda r: (text(r),)),
    Task(["largest", "biggest"], "nums", ["returns the largest number in the list nums"], ["finds the maximum value of nums"],
         "def {name}(nums):\n    return max(nums)", lambda r: (int_list(r),)),
    Task(["factorial", "fact"], "n", ["returns n factorial"], ["computes the product 1 * 2 * ... * n (1 when n is 0)"],
         "def {name}(n):\n    result = 1\n    for i in range(2, n + 1):\n        result *= i\n    return result", lambda r: (r.randint(0, 9),)),
    Task(["is_palindrome", "reads_same"], "s", ["returns True if s reads the same forwards and backwards"], ["tells whether the string s is a palindrome"],
         "def {name}(s):\n    return s == s[::-1]", lambda r: (r.choice(WORDS),)),
    Task(["dedupe", "unique_items"], "items", ["returns items without duplicates, keeping the first occurrence order"], ["removes repeated elements of items but keeps their original order"],
         "def {name}(items):\n    seen = []\n    for x in items:\n        if x not in seen:\n            seen.append(x)\n    return seen", lambda r: ([r.randint(0, 5) for _ in range(r.randint(4, 8))],)),
    Task(["count_words", "word_count"], "text", ["returns the number of words in text"], ["says how many space-separated words text has"],
         "def {name}(text):\n    return len(text.split())", lambda r: (text(r),)),
    Task(["above", "keep_greater"], "nums", ["returns the numbers in nums that are greater than {k}"], ["keeps only the elements of nums larger than {k}"],
         "def {name}(nums):\n    return [x for x in nums if x > {k}]", lambda r: (int_list(r),), (0, 20)),
    Task(["product", "multiply_all"], "nums", ["returns the product of all numbers in nums"], ["multiplies every element of nums together"],
         "def {name}(nums):\n    result = 1\n    for x in nums:\n        result *= x\n    return result", lambda r: ([r.randint(-5, 9) for _ in range(r.randint(2, 5))],)),
    Task(["is_prime", "prime_check"], "n", ["returns True if n is a prime number"], ["decides whether the integer n is prime"],
         "def {name}(n):\n    if n < 2:\n        return False\n    for d in range(2, int(n ** 0.5) + 1):\n        if n % d == 0:\n            return False\n    return True", lambda r: (r.randint(0, 60),)),
    Task(["gcd", "common_divisor"], "a, b", ["returns the greatest common divisor of a and b"], ["finds the largest integer dividing both a and b"],
         "def {name}(a, b):\n    while b:\n        a, b = b, a % b\n    return a", lambda r: (r.randint(1, 90), r.randint(1, 90))),
    Task(["running_total", "cumulative"], "nums", ["returns the running sums of nums as a list"], ["gives a list whose i-th element is nums[0] + ... + nums[i]"],
         "def {name}(nums):\n    total, out = 0, []\n    for x in nums:\n        total += x\n        out.append(total)\n    return out", lambda r: (int_list(r),)),
    Task(["to_fahrenheit", "c_to_f"], "celsius", ["converts celsius to fahrenheit"], ["turns a temperature in degrees celsius into degrees fahrenheit"],
         "def {name}(celsius):\n    return celsius * 9 / 5 + 32", lambda r: (r.randint(-30, 40),)),
    Task(["scale", "times_k"], "nums", ["returns each number in nums multiplied by {k}"], ["gives a new list with every element of nums times {k}"],
         "def {name}(nums):\n    return [x * {k} for x in nums]", lambda r: (int_list(r),), (2, 9)),
    Task(["capitalize_words", "title_words"], "text", ["returns text with the first letter of every word capitalized"], ["capitalises each word of text"],
         "def {name}(text):\n    return \" \".join(w.capitalize() for w in text.split())", lambda r: (text(r),)),
    Task(["count_negatives", "negatives"], "nums", ["returns how many numbers in nums are below zero"], ["counts the negative elements of nums"],
         "def {name}(nums):\n    return sum(1 for x in nums if x < 0)", lambda r: (int_list(r),)),
    Task(["longest_word", "longest"], "text", ["returns the longest word in text (the first one on a tie)"], ["finds the word of text with the most letters, the earliest if several tie"],
         "def {name}(text):\n    return max(text.split(), key=len)", lambda r: (text(r),)),
]
HELDOUT_TASKS = [
    Task(["count_char", "occurrences"], "s, ch", [], ["tells how many times the character ch occurs in s", "gives the number of occurrences of ch inside s"],
         "def {name}(s, ch):\n    return s.count(ch)", lambda r: (text(r), r.choice("aeiornst"))),
    Task(["reverse_words", "words_backwards"], "text", [], ["puts the words of text in the opposite order, joined by single spaces", "flips the order of the words in text"],
         "def {name}(text):\n    return \" \".join(reversed(text.split()))", lambda r: (text(r),)),
    Task(["second_largest", "runner_up"], "nums", [], ["gives the second biggest distinct value in nums", "finds the next-to-greatest distinct element of nums"],
         "def {name}(nums):\n    return sorted(set(nums))[-2]", lambda r: (list({r.randint(-9, 40) for _ in range(6)} | {41, 42}),)),
    Task(["digit_sum", "sum_of_digits"], "n", [], ["adds the decimal digits of the non-negative integer n", "gives the total of the digits of n"],
         "def {name}(n):\n    return sum(int(d) for d in str(n))", lambda r: (r.randint(0, 99999),)),
    Task(["is_sorted", "in_order"], "nums", [], ["tells whether nums is in non-decreasing order", "checks that no element of nums is smaller than the one before it"],
         "def {name}(nums):\n    return all(a <= b for a, b in zip(nums, nums[1:]))", lambda r: (sorted(int_list(r)) if r.random() < 0.5 else int_list(r),)),
    Task(["clamp_all", "limit_values"], "nums", [], ["caps every element of nums to the range 0 to {k}", "forces each value of nums into the interval [0, {k}]"],
         "def {name}(nums):\n    return [min(max(x, 0), {k}) for x in nums]", lambda r: (int_list(r),), (10, 30)),
    Task(["count_upper", "capitals_in"], "text", [], ["tells how many uppercase letters text contains", "gives the number of capital letters in text"],
         "def {name}(text):\n    return len([c for c in text if c.isupper()])", lambda r: (mixed_case(r),)),
    Task(["flatten", "concat_lists"], "lists", [], ["joins a list of lists into one flat list, in order", "turns lists, a list of lists, into a single list of their elements"],
         "def {name}(lists):\n    return [x for inner in lists for x in inner]", lambda r: ([int_list(r)[: r.randint(0, 3)] for _ in range(r.randint(2, 4))],)),
    Task(["mode_value", "most_frequent"], "nums", [], ["gives the value that appears most often in nums (the smallest one on a tie)", "finds the commonest element of nums, preferring the lowest when counts tie"],
         "def {name}(nums):\n    return min(set(nums), key=lambda v: (-nums.count(v), v))", lambda r: ([r.randint(0, 4) for _ in range(r.randint(5, 9))],)),
    Task(["differences", "gaps"], "nums", [], ["gives the list of differences between each element of nums and the one before it", "computes nums[i + 1] - nums[i] for every neighbouring pair"],
         "def {name}(nums):\n    return [b - a for a, b in zip(nums, nums[1:])]", lambda r: (int_list(r),)),
    Task(["initials", "monogram"], "name", [], ["gives the uppercase first letters of the words of name, joined with no spaces", "builds the initials of name in capitals"],
         "def {name}(name):\n    return \"\".join(w[0].upper() for w in name.split())", lambda r: (text(r),)),
    Task(["swap_pairs", "flip_pairs"], "pairs", [], ["exchanges the two items of every [a, b] pair in pairs", "turns each two-element list [a, b] of pairs into [b, a]"],
         "def {name}(pairs):\n    return [[b, a] for a, b in pairs]", lambda r: ([[r.randint(0, 9), r.randint(0, 9)] for _ in range(r.randint(1, 4))],)),
]
REQUESTS = {
    "train": ["Write a Python function `{signature}` that {what}.", "Implement `{signature}` in Python so that it {what}."],
    "heldout": ["Create `{signature}`, a Python function which {what}.", "Could you code `{signature}` for me? It {what}."],
}


def solution(code: str) -> str:
    return f"```python\n{code}\n```"


def tests_for(task: Task, name: str, code: str, rng, count: int = 3) -> list[dict[str, Any]]:
    """Arguments and the reference's output on them, as JSON values (what the sandbox compares)."""
    namespace: dict = {}
    exec(code, namespace)  # our own reference code, to compute the expected outputs
    tests = []
    for _ in range(count):
        args = task.inputs(rng)
        tests.append(json.loads(json.dumps({"args": list(args), "expected": namespace[name](*args)})))
    return tests


class CodingFamily(Family):
    name = "coding"
    recipe = Recipe(examples=160, epochs=2)
    max_tokens = 192
    withheld = "12 kinds of function never trained on, with their own names"

    def generate(self, split: Split, n: int, seed: int = 0, **options: Any) -> list[Case]:
        rng = rng_for(split, seed, self.name)
        tasks = HELDOUT_TASKS if split == "heldout" else TRAIN_TASKS
        templates = "train" if split == "train" else "heldout"
        cases = []
        for _ in range(n):
            task = rng.choice(tasks)
            name = rng.choice(task.names)
            values = {"name": name, "k": rng.randint(*task.constant) if task.constant else 0}
            what = fill(rng.choice(getattr(task, templates)), values)
            request = fill(rng.choice(REQUESTS[templates]), {"signature": f"{name}({task.params})", "what": what})
            code = fill(task.code, values)
            answer = {"role": "assistant", "content": solution(code)}
            cases.append(Case(self.name, [{"role": "user", "content": request}], answer, check={"function": name, "tests": tests_for(task, name, code, rng)}))
        return cases

    def failure(self, case: Case, message: Message) -> str:
        return "failing test" if CODE_BLOCK.search(message.get("content") or "") else "no code block"

    def score(self, case: Case, message: Message) -> dict[str, float]:
        block = CODE_BLOCK.search(message.get("content") or "")
        return {"score": float(block is not None and run_tests(block.group(1), case.check["function"], case.check["tests"]))}

    def summary_of(self, case: Case) -> str:
        return f"I wrote the Python function {case.check['function']} for the user."

    def entities(self, case: Case) -> set[str]:
        return {case.check["function"]}


FAMILY = CodingFamily()
