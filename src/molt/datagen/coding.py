"""The ``coding`` family: small Python functions, each with tests its reference solution passes.

A task kind is a function to write (several possible names, one signature), its reference
code, and how to draw inputs; some kinds take a constant stated in the request ("greater than
7"). The tests are the reference's own outputs on drawn inputs, so a reference always passes,
and an answer is scored by running its code block against them (``molt.evaluate.sandbox``).
"""

from collections.abc import Callable
from dataclasses import dataclass

from molt.datagen.common import Case, Split, fill, rng_for

WORDS = ["apple", "river", "stone", "level", "music", "tiger", "noon", "cloud", "orange", "paper", "radar", "lemon"]


def int_list(rng) -> list[int]:
    return [rng.randint(-20, 50) for _ in range(rng.randint(3, 7))]


def text(rng) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 5)))


@dataclass(frozen=True)
class Task:
    names: list[str]
    params: str
    train: list[str]
    heldout: list[str]
    """What the function does, as a clause after "it" ("returns ..."), per split."""
    code: str
    """The reference body, with {name} and any {k}."""
    inputs: Callable
    """rng → argument tuple."""
    constant: tuple[int, int] | None = None


TASKS = [
    Task(["sum_evens", "even_total"], "nums", ["returns the sum of the even numbers in nums"], ["adds up only the even values of the list nums"],
         "def {name}(nums):\n    return sum(x for x in nums if x % 2 == 0)", lambda r: (int_list(r),)),
    Task(["reverse_text", "backwards"], "s", ["returns the string s reversed"], ["gives back s with its characters in reverse order"],
         "def {name}(s):\n    return s[::-1]", lambda r: (text(r),)),
    Task(["count_vowels", "vowel_count"], "s", ["returns how many vowels (a, e, i, o, u) the string s contains"], ["counts the letters a, e, i, o and u in s"],
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
REQUESTS = {
    "train": ["Write a Python function `{signature}` that {what}.", "Implement `{signature}` in Python so that it {what}."],
    "heldout": ["Create `{signature}`, a Python function which {what}.", "Could you code `{signature}` for me? It {what}."],
}


def solution(code: str) -> str:
    return f"```python\n{code}\n```"


def tests_for(task: Task, name: str, code: str, rng) -> list[str]:
    namespace: dict = {}
    exec(code, namespace)  # our own reference code, to compute the expected outputs
    asserts = []
    for _ in range(3):
        args = task.inputs(rng)
        asserts.append(f"assert {name}({', '.join(map(repr, args))}) == {namespace[name](*args)!r}")
    return asserts


def generate(split: Split, n: int, seed: int = 0) -> list[Case]:
    rng = rng_for(split, seed, "coding")
    cases = []
    for _ in range(n):
        task = rng.choice(TASKS)
        name = rng.choice(task.names)
        values = {"name": name, "k": rng.randint(*task.constant) if task.constant else 0}
        what = fill(rng.choice(getattr(task, split)), values)
        request = fill(rng.choice(REQUESTS[split]), {"signature": f"{name}({task.params})", "what": what})
        code = fill(task.code, values)
        answer = {"role": "assistant", "content": solution(code)}
        cases.append(Case("coding", [{"role": "user", "content": request}], answer, check={"function": name, "tests": tests_for(task, name, code, rng)}))
    return cases
