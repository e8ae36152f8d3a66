"""Wording of the outside-style corpus that is not about one domain: general-knowledge topics and
small talk (in English and the split's languages), and the templates of coding and UI requests
and of follow-up turns. Everything is keyed by split: the held-out split's topics, languages and
templates are its own.
"""

LANGUAGES = {"train": ("es", "fr"), "heldout": ("de", "pt")}
"""Languages besides English, per split."""

TOPICS = {
    "train": {
        "geography": ("What is the capital of Australia?", "Which river is the longest in Europe?", "How many countries are in Africa?",
                      "Is Greenland part of North America?", "What's the highest mountain in Japan?", "Which ocean is the deepest?"),
        "science": ("Why does ice float on water?", "How do vaccines train the immune system?", "What is the speed of light?",
                    "Why do we have seasons?", "What's the difference between a virus and a bacterium?", "How do magnets work?"),
        "art": ("Who painted the ceiling of the Sistine Chapel?", "What is impressionism?", "Why is the Mona Lisa so famous?",
                "What's the difference between a fresco and a mural?", "How did Van Gogh paint 'The Starry Night'?"),
        "cooking": ("Why do you rest a steak after cooking it?", "Can I substitute baking soda for baking powder?", "How long should I boil an egg for a runny yolk?",
                    "What makes bread rise?", "Is olive oil okay for frying?"),
    },
    "heldout": {
        "history": ("When did the Berlin Wall fall?", "Who built Machu Picchu?", "Why did the Roman Empire split in two?",
                    "What started the First World War?", "Who was the first woman to win a Nobel Prize?", "How old are the pyramids of Giza?"),
        "literature": ("Who wrote 'One Hundred Years of Solitude'?", "What is magical realism?", "Is 'Frankenstein' the monster or the doctor?",
                       "What's the difference between a novel and a novella?", "Why is Dostoevsky considered so important?"),
        "sports": ("How long is a marathon?", "What is the offside rule in football?", "Who has won the most Wimbledon titles?",
                   "Why do cyclists shave their legs?", "How many players are on a volleyball team?"),
        "music": ("What is a minor key?", "Who composed the Four Seasons?", "What's the difference between a violin and a viola?",
                  "Why do orchestras tune to A?", "What does tempo mean in music?"),
    },
}
"""General-knowledge questions by topic (chat): no action, no code, no UI."""

TRIVIA = {
    "train": (
        ("How many {small} are there in a {big}?", {"small": ("minutes", "seconds", "days", "weeks", "grams"), "big": ("hour", "day", "year", "kilogram", "month")}),
        ("Who invented the {invention}?", {"invention": ("telephone", "light bulb", "printing press", "steam engine", "bicycle", "microscope")}),
        ("What language do people speak in {country}?", {"country": ("Brazil", "Austria", "Mexico", "Belgium", "Senegal", "Iran")}),
        ("Why is {planet} called the {nickname}?", {"planet": ("Mars", "Venus", "Jupiter"), "nickname": ("red planet", "morning star", "gas giant")}),
        ("Is a {animal} a {group}?", {"animal": ("whale", "bat", "penguin", "spider", "shark"), "group": ("mammal", "fish", "bird", "insect")}),
    ),
    "heldout": (
        ("In which century did {event} happen?", {"event": ("the French Revolution", "the Black Death", "the fall of Constantinople", "the first Moon landing")}),
        ("What is the tallest {thing} in the world?", {"thing": ("building", "tree", "waterfall", "volcano", "statue")}),
        ("Where does {food} originally come from?", {"food": ("coffee", "chocolate", "the potato", "sushi", "tea")}),
        ("Who was {person}?", {"person": ("Ada Lovelace", "Genghis Khan", "Frida Kahlo", "Nikola Tesla", "Cleopatra")}),
        ("How far is {place} from {other}?", {"place": ("the Moon", "Mars", "the Sun"), "other": ("Earth", "Jupiter")}),
    ),
}
"""Templated general-knowledge questions (chat), drawn with their vocabulary."""
TRIVIA_TOPIC = {"train": "trivia", "heldout": "almanac"}

NATIVE_QUESTIONS = {
    "es": ("¿Cuál es la capital de Canadá?", "¿Por qué el cielo es azul?", "¿Quién pintó Las Meninas?", "¿Cuántos continentes hay?"),
    "fr": ("Quelle est la capitale du Japon ?", "Pourquoi la mer est-elle salée ?", "Qui a écrit Les Misérables ?", "Combien d'os a le corps humain ?"),
    "de": ("Was ist die Hauptstadt von Frankreich?", "Wann fiel die Berliner Mauer?", "Wer hat den Faust geschrieben?", "Warum ist der Himmel blau?"),
    "pt": ("Qual é a capital da Austrália?", "Quem descobriu o Brasil?", "Quem escreveu Os Lusíadas?", "Porque é que o mar é salgado?"),
}

SMALL_TALK = {
    "train": ("hi there", "Good morning! How's it going?", "thanks, that was helpful", "You're awesome, thank you!", "ok cool", "Hello again!",
              "Nice, appreciate it.", "hey, how are you today?", "Bye for now!", "great, thanks", "Good night!", "haha nice", "How's your day been?",
              "What's your favourite colour?", "I'm back!", "Have a good weekend."),
    "heldout": ("tell me a joke", "I'm bored, entertain me", "you're pretty clever, you know that?", "lol that's funny", "what's up",
                "sup", "see ya later", "ugh, long day", "are you having a good day?", "cheers mate"),
}
NATIVE_SMALL_TALK = {
    "es": ("¡Hola! ¿Qué tal?", "Muchas gracias por tu ayuda.", "Buenos días"),
    "fr": ("Salut, ça va ?", "Merci beaucoup !", "Bonne soirée !"),
    "de": ("Hallo, wie geht's?", "Vielen Dank für deine Hilfe!", "Guten Morgen!"),
    "pt": ("Olá, tudo bem?", "Muito obrigado pela ajuda!", "Bom dia!"),
}
SMALL_TALK_TOPIC = {"train": "greetings", "heldout": "banter"}

PROGRAMMING_LANGUAGES = {"train": ("Python", "JavaScript", "C++", "Ruby", "Kotlin", "Bash"), "heldout": ("Python", "Go", "Rust", "Java", "TypeScript")}

CODING_ASKS = {
    "train": ("Write a {lang} function for this: {task}.", "Implement this in {lang}: {task}.", "How would I code this in {lang}? {task}.",
              "I need a {lang} function, {task}.", "Can you write {lang} code that does this: {task}?", "Show me how to do this in {lang}: {task}.",
              "{lang} solution please: {task}.", "Help me program this in {lang}. {task}."),
    "heldout": ("Could you sketch some {lang} for the following. Task: {task}.", "{lang} please — {task}. Keep it simple.",
                "what's the cleanest way in {lang} to do this: {task}"),
}
NATIVE_CODING_ASKS = {
    "es": ("Escribe una función en {lang} para esto: {task}.",), "fr": ("Écris une fonction {lang} pour ceci : {task}.",),
    "de": ("Schreib eine {lang}-Funktion dafür: {task}.",), "pt": ("Escreve uma função em {lang} para isto: {task}.",),
}
PROBLEM = {
    "train": "{title}\n\nYou are given {task}.\n\nInput\nThe first line contains n (1 ≤ n ≤ 10^5). Each of the next n lines contains two integers.\n\n"
             "Output\nPrint one integer.\n\nExample\nInput\n3\n1 4\n2 5\n6 8\nOutput\n2",
    "heldout": "### {title}\n\nProblem: {task}.\n\n**Constraints:** `1 <= len(records) <= 2 * 10**5`\n\n**Example 1:**\n```\nInput: records = [[1, 3], [2, 6], [8, 10]]\n"
               "Output: 2\n```\nReturn the answer as an integer.",
}
PROBLEM_ASKS = {"train": ("Solve this:", "Can you help with this problem?", "Need a solution for this one"),
                "heldout": ("Stuck on this kata, any ideas?", "Give me an O(n log n) approach:", "How do I pass all test cases here?")}

BUGS = {
    "train": (
        ("python", "total = 0\nfor r in records:\n    total += r[\"{field}\"]\nprint(total)",
         "Traceback (most recent call last):\n  File \"report.py\", line 3, in <module>\n    total += r[\"{field}\"]\nKeyError: '{field}'"),
        ("python", "def average(items):\n    return sum(items) / len(items)\n\nprint(average(\"{field}\"))",
         "Traceback (most recent call last):\n  File \"stats.py\", line 4, in <module>\n    print(average(\"{field}\"))\n  File \"stats.py\", line 2, in average\n    return sum(items) / len(items)\nTypeError: unsupported operand type(s) for +: 'int' and 'str'"),
        ("javascript", "const rows = data.{things_key}.map(r => r.{field_key});\nconsole.log(rows.length);",
         "TypeError: Cannot read properties of undefined (reading 'map')\n    at report.js:1:32"),
    ),
    "heldout": (
        ("python", "class Store:\n    def load(self):\n        self.rows = fetch()\n\nstore = Store()\nprint(store.rows[0])",
         "Traceback (most recent call last):\n  File \"app.py\", line 6, in <module>\n    print(store.rows[0])\nAttributeError: 'Store' object has no attribute 'rows'"),
        ("python", "rate = used / days\nprint(f\"{field}: {{rate:.2f}}\")",
         "Traceback (most recent call last):\n  File \"usage.py\", line 1, in <module>\n    rate = used / days\nZeroDivisionError: division by zero"),
        ("go", "func last(xs []int) int {\n    return xs[len(xs)]\n}",
         "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.last(...)\n\t/app/main.go:4"),
        ("java", "String name = record.get(\"{field}\");\nSystem.out.println(name.trim());",
         "Exception in thread \"main\" java.lang.NullPointerException\n\tat Report.main(Report.java:12)"),
    ),
}
BUG_ASKS = {"train": ("Why does this crash?", "I get this error, what's wrong?", "Can you fix my code?"),
            "heldout": ("no idea what's going on here, help", "This blows up at runtime — what am I missing?", "Debug this for me please.")}

EXPLAIN_ASKS = {"train": ("What does this code do?", "Explain this snippet to me:"), "heldout": ("Walk me through what this is doing, line by line:", "Is this code correct?")}
SNIPPETS = (
    "def f(xs):\n    return [x for x in xs if x % 2 == 0]",
    "const total = items.reduce((acc, it) => acc + it.price, 0);",
    "SELECT customer, SUM(amount) FROM orders GROUP BY customer HAVING SUM(amount) > 100;",
    "for i in range(len(a)):\n    for j in range(i + 1, len(a)):\n        if a[i] > a[j]:\n            a[i], a[j] = a[j], a[i]",
)
CODE_FOLLOW_UPS = {
    "train": ("Now make it handle an empty list.", "Can you add type hints to that?", "Make it return the result sorted too.", "Add a docstring and a test.",
              "Can you make that a one-liner?", "It fails when a value is None, fix that.", "Now do the same but group by month.", "Write unit tests for it.",
              "Rename the variables so it's readable.", "Why did you use a loop there instead of sum()?", "Make it async.", "Turn it into a class."),
    "heldout": ("it works but it's slow on big inputs, speed it up?", "port that to {lang}", "rewrite it without recursion", "make it read the records from a CSV file instead"),
}

UI_ASKS = {
    "train": ("Build a dashboard of my {things} showing {fields}.", "Make a form to add a new {thing} with {fields}.",
              "Show my {things} as a table with columns {fields}.", "Create a card summarising a {thing}: {fields}.",
              "I want a screen where I can filter {things} by {field}.", "Design a page that lists {things} with {fields}.",
              "Can you draw me a UI for editing a {thing}? Fields: {fields}.", "Put together a settings panel for {things} with {fields}.",
              "Make a signup screen for a {thing} with {fields}."),
    "heldout": ("I'd love a little admin panel for {things}, with {fields} front and center.", "Render an entry screen for a {thing} (fields: {fields}).",
                "Lay out a grid of {things}, one column each for {fields}.", "Give me a widget that summarises one {thing} with {fields}.",
                "mock up a page to review {things} and sort them by {field}"),
}
NATIVE_UI_ASKS = {
    "es": ("Crea un formulario para registrar un {thing} con {fields}.", "Hazme un panel con mis {things}: {fields}."),
    "fr": ("Crée un formulaire pour un {thing} avec {fields}.", "Fais-moi un tableau de bord des {things} : {fields}."),
    "de": ("Erstelle ein Formular für {thing} mit {fields}.", "Bau mir ein Dashboard für {things} mit {fields}."),
    "pt": ("Cria um formulário para {thing} com {fields}.", "Faz um painel com os {things}: {fields}."),
}
UI_EDITS = {
    "train": ("Add a {field} field to it.", "Make the button say Save instead.", "Can you put {field} at the top?", "Remove the {field} part.",
              "Make the title bigger.", "Add a cancel button next to submit.", "Split it into two steps.", "Turn the {field} field into a dropdown.",
              "Add a checkbox to accept the terms.", "Can it show a date picker for {field}?", "Make {field} required.", "Group the fields in a card."),
    "heldout": ("could the {field} column go first?", "drop the {field} input, we don't need it", "swap the layout so it's two columns", "rename the title to '{Things} overview'"),
}

THANKS_AFTER = {
    "train": ("Thanks, that's perfect!", "Great, that works.", "Awesome, thank you so much.", "Perfect, cheers!", "That's exactly it, thanks.",
              "Brilliant, you're a star.", "ok great", "Lovely, thank you!"),
    "heldout": ("nice one, cheers", "sweet, exactly what I needed", "legend, thx"),
}
AGENT_FOLLOW_UPS = {"train": ("Great. Now {ask}", "Thanks! Also, {ask}", "Perfect, and {ask}"),
                    "heldout": ("cool — next: {ask}", "ok and then {ask}", "right, one more thing: {ask}")}
RESULT_ANSWERS = ("Done — here are the details.", "All set.", "That went through.")
