"""ChatML (``<|im_start|>role\\n...<|im_end|>\\n``): SmolLM2, Qwen and many others.

The default system prompt is read off the model's own chat template (SmolLM2's inserts one when a
conversation has none), so rendered tokens equal ``apply_chat_template`` for plain conversations.
"""

from functools import cached_property

from molt.models.renderer import Renderer

START, END = "<|im_start|>", "<|im_end|>"


class ChatMLRenderer(Renderer):
    def header(self, role: str) -> str:
        return f"{START}{role}\n"

    @property
    def end(self) -> str:
        return END

    @property
    def separator(self) -> str:
        return "\n"

    @cached_property
    def default_system(self) -> str | None:
        probe = self.tokenizer.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False)
        opening = self.header("system")
        if not probe.startswith(opening):
            return None
        return probe[len(opening) : probe.index(END)]
