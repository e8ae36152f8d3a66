"""The ``chat`` family: identity, small talk and short direct answers.

Scored by a rubric (``molt.evaluate``): the answer must contain the required words, stay short,
and be plain text (no tool call, no code block, no UI JSON).
"""

from molt.datagen.common import Case, Split, fill, rng_for

CAPITALS = {
    "France": "Paris", "Peru": "Lima", "Japan": "Tokyo", "Kenya": "Nairobi", "Canada": "Ottawa", "Egypt": "Cairo",
    "Norway": "Oslo", "Spain": "Madrid", "Italy": "Rome", "Germany": "Berlin", "Portugal": "Lisbon", "Ireland": "Dublin",
    "Greece": "Athens", "Austria": "Vienna", "Poland": "Warsaw", "Sweden": "Stockholm", "Russia": "Moscow", "China": "Beijing",
}
OPPOSITES = {"hot": "cold", "big": "small", "fast": "slow", "happy": "sad", "early": "late", "open": "closed", "light": "dark", "up": "down"}
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
IDENTITY = "I'm molt, a helpful AI assistant. How can I help?"
GREETING = "Hello! How can I help you today?"
KINDS = {
    "identity": {
        "train": ["Who are you?", "What's your name?", "Introduce yourself.", "Are you a person or a program?", "Tell me who I'm chatting with.", "Say your name, please."],
        "heldout": ["What should I call you?", "Tell me about yourself.", "Which assistant am I talking to?"],
    },
    "greeting": {
        "train": ["Hi!", "Hello there.", "Hey, how are you?", "Good morning!", "Nice to meet you!", "Hey there, what's up?", "Greetings!", "Yo!"],
        "heldout": ["Hiya, nice to meet you.", "Good evening, how is it going?", "Howdy!"],
    },
    "thanks": {
        "train": ["Thanks!", "Thank you so much.", "Great, thanks a lot.", "Cheers, that helped."],
        "heldout": ["Much appreciated!", "Thanks a bunch, friend."],
    },
    "capital": {
        "train": ["What is the capital of {country}?", "Which city is the capital of {country}?", "Tell me the capital of {country}.", "Say the capital of {country}."],
        "heldout": ["Name the capital city of {country}.", "{country}'s capital is which city?"],
    },
    "sum": {
        "train": ["What is {a} plus {b}?", "How much is {a} + {b}?", "Compute {a} plus {b}.", "Sum {a} and {b} for me.", "Quick math: {a} + {b}?"],
        "heldout": ["Add {a} and {b}.", "What do you get when you add {a} to {b}?"],
    },
    "opposite": {
        "train": ["What is the opposite of {word}?", "What's the opposite of the word {word}?", "Tell me the opposite of {word}.", "Say a word that means the opposite of {word}."],
        "heldout": ["Give me the antonym of {word}.", "Which word means the reverse of {word}?"],
    },
    "next_day": {
        "train": ["What day comes after {day}?", "Which day follows {day}?", "Tell me the day that comes after {day}.", "Say which weekday follows {day}."],
        "heldout": ["If today is {day}, what day is tomorrow?", "Name the day after {day}."],
    },
}


def generate(split: Split, n: int, seed: int = 0) -> list[Case]:
    rng = rng_for(split, seed, "chat")
    cases = []
    for _ in range(n):
        kind = rng.choice(sorted(KINDS))
        values: dict = {}
        if kind == "identity":
            answer, required = IDENTITY, ["molt"]
        elif kind == "greeting":
            answer, required = GREETING, ["help"]
        elif kind == "thanks":
            answer, required = "You're welcome! Anything else I can do?", ["welcome"]
        elif kind == "capital":
            values["country"] = rng.choice(sorted(CAPITALS))
            answer, required = f"The capital of {values['country']} is {CAPITALS[values['country']]}.", [CAPITALS[values["country"]]]
        elif kind == "sum":
            values.update(a=rng.randint(1, 20), b=rng.randint(1, 20))
            total = values["a"] + values["b"]
            answer, required = f"{values['a']} plus {values['b']} is {total}.", [str(total)]
        elif kind == "opposite":
            values["word"] = rng.choice(sorted(OPPOSITES))
            answer, required = f"The opposite of {values['word']} is {OPPOSITES[values['word']]}.", [OPPOSITES[values["word"]]]
        else:
            values["day"] = rng.choice(DAYS)
            following = DAYS[(DAYS.index(values["day"]) + 1) % 7]
            answer, required = f"The day after {values['day']} is {following}.", [following]
        request = fill(rng.choice(KINDS[kind][split]), values)
        cases.append(Case("chat", [{"role": "user", "content": request}], {"role": "assistant", "content": answer}, check={"kind": kind, "require": required}))
    return cases
