"""Renderers: chat messages → token ids (with training weights), generated tokens → a message.

The renderer, not the tokenizer's Jinja template, owns the exact tokens (the tinker-cookbook idea):
training needs a weight per token and serving needs stable prefixes. Tests check that for plain
conversations the tokens equal the model's own chat template.

- **Append-only:** a message renders to the same tokens whatever follows it, so the tokens of a
  conversation are a prefix of those of the same conversation plus one turn (prefix caching).
- **Pieces:** each message is encoded as header (weight 0), body + end token (the trained part),
  separator (weight 0); each piece is tokenised on its own, so piece boundaries are token
  boundaries. Message text is tokenised with special tokens split, so a user who types
  ``<|im_end|>`` gets plain text, not a turn boundary.
- **Messages** are OpenAI chat messages (``role``, ``content``, ``tool_calls``, ``tool_call_id``)
  plus one molt field, ``trainable`` (bool), that overrides which turns get weight 1.
- **Tools** are offered in the system message; calls and results use the tool-call format
  (``tool_calls.py``) that the renderer is built with.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from molt.models.chat_shapes import check_message
from molt.models.tool_calls import ToolCallFormat, get_tool_call_format

if TYPE_CHECKING:  # transformers takes a second to import; request checks need none of it
    from transformers import PreTrainedTokenizerBase

Message = dict[str, Any]
TrainOn = Literal["all_assistant", "last_assistant"]


@dataclass(frozen=True)
class SupervisedExample:
    tokens: list[int]
    weights: list[float]
    """1.0 on the tokens the model is trained to produce, 0.0 elsewhere; same length as tokens."""


@dataclass(frozen=True)
class ParsedResponse:
    message: Message
    """An OpenAI assistant message: ``content`` and, when the model called tools, ``tool_calls``."""
    complete: bool
    """True when generation ended on a stop token (not cut off by a length limit)."""
    errors: list[str]
    """Tool-call blocks that could not be parsed (their text stays in ``content``)."""


class Renderer(ABC):
    """Chat format of one model family. Subclasses give the piece strings; this class does the rest."""

    def __init__(self, tokenizer: "PreTrainedTokenizerBase", tool_format: str | ToolCallFormat = "hermes"):
        self.tokenizer = tokenizer
        self.tool_format = get_tool_call_format(tool_format) if isinstance(tool_format, str) else tool_format
        self._encode_control = cache(lambda text: tuple(tokenizer.encode(text, add_special_tokens=False)))

    # -- what a model family defines -------------------------------------------------------------
    @abstractmethod
    def header(self, role: str) -> str:
        """Text that opens a turn of ``role``."""

    @property
    @abstractmethod
    def end(self) -> str:
        """Text that closes a turn; the model learns to produce it and generation stops on it."""

    @property
    @abstractmethod
    def separator(self) -> str:
        """Text between turns, after ``end``."""

    @property
    @abstractmethod
    def default_system(self) -> str | None:
        """System prompt the family's template inserts when a conversation has none."""

    # -- rendering -------------------------------------------------------------------------------
    def render(self, messages: list[Message], tools: list[dict] | None = None) -> list[int]:
        """Tokens of the conversation as context (every message complete)."""
        return self.supervised_example(messages, tools).tokens

    def generation_prompt(self, messages: list[Message], tools: list[dict] | None = None) -> list[int]:
        """Tokens after which the model writes the next assistant turn."""
        return self.render(messages, tools) + list(self._encode_control(self.header("assistant")))

    def supervised_example(
        self, messages: list[Message], tools: list[dict] | None = None, train_on: TrainOn = "all_assistant"
    ) -> SupervisedExample:
        """Tokens and per-token weights: 1.0 on the body and end token of each trained turn."""
        tokens: list[int] = []
        weights: list[float] = []
        turns = self._turns(messages, tools)
        last_assistant = max((i for i, (role, _, _) in enumerate(turns) if role == "assistant"), default=-1)
        for i, (role, body, message) in enumerate(turns):
            default = role == "assistant" and (train_on == "all_assistant" or i == last_assistant)
            weight = 1.0 if message.get("trainable", default) else 0.0
            header, trained, separator = self._turn_tokens(role, body)
            tokens += [*header, *trained, *separator]
            weights += [0.0] * len(header) + [weight] * len(trained) + [0.0] * len(separator)
        return SupervisedExample(tokens, weights)

    def message_tokens(self, message: Message) -> int:
        """Tokens ``message`` adds to a conversation after its system turn: pieces are encoded one
        by one, so a view's length is the sum over its messages (the proxy fits views by this)."""
        message = check_message(message)
        return sum(map(len, self._turn_tokens(message["role"], self.message_body(message))))

    def _turn_tokens(self, role: str, body: str) -> tuple[list[int], list[int], list[int]]:
        """(header, body and end, separator) of one rendered turn."""
        header = list(self._encode_control(self.header(role)))
        return header, self._encode_text(body) + list(self._encode_control(self.end)), list(self._encode_control(self.separator))

    def _turns(self, messages: list[Message], tools: list[dict] | None) -> list[tuple[str, str, Message]]:
        """(role, body, message) per rendered turn; the system turn also carries the tools."""
        turns = [(m["role"], self.message_body(m), m) for m in map(check_message, messages)]
        system_message: Message = {"role": "system"}
        if turns and turns[0][0] == "system":
            (_, system, system_message), turns = turns[0], turns[1:]
        else:
            system = self.default_system
        if tools:
            system = (system + "\n\n" if system else "") + self.tool_format.tools_prompt(tools)
        return turns if system is None else [("system", system, system_message), *turns]

    def message_body(self, message: Message) -> str:
        role, content = message["role"], message_text(message)
        if role == "tool":
            return self.tool_format.format_result(content)
        if role == "assistant" and message.get("tool_calls"):
            calls = self.tool_format.format_calls(message["tool_calls"])
            return f"{content}\n{calls}" if content else calls
        return content

    def _encode_text(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False, split_special_tokens=True)

    # -- generation ------------------------------------------------------------------------------
    @property
    def stop_token_ids(self) -> list[int]:
        """Token ids that end an assistant turn."""
        return list(self._encode_control(self.end))[-1:]

    def parse_response(self, tokens: list[int]) -> ParsedResponse:
        """The assistant message in generated ``tokens`` (everything up to the first stop token)."""
        stops = set(self.stop_token_ids)
        cut = next((i for i, t in enumerate(tokens) if t in stops), None)
        text = self.tokenizer.decode(tokens[:cut], skip_special_tokens=True)
        parsed = self.tool_format.parse(text)
        message: Message = {"role": "assistant", "content": parsed.content}
        if parsed.tool_calls:
            message["tool_calls"] = parsed.tool_calls
            message["content"] = parsed.content or None
        return ParsedResponse(message, complete=cut is not None, errors=parsed.errors)


def message_text(message: Message) -> str:
    """``content`` as one string: OpenAI allows a string, null, or a list of text parts."""
    content = message.get("content")
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "".join(str(p.get("text", "")) for p in content)
    raise ValueError("message content must be a string or a list of {'type': 'text', 'text': ...} parts")


def get_renderer(tokenizer: "PreTrainedTokenizerBase", tool_format: str | ToolCallFormat = "hermes") -> Renderer:
    """The renderer for this tokenizer's chat format."""
    from molt.models.renderers import RENDERERS

    template = tokenizer.chat_template or ""
    for family, (marker, cls) in RENDERERS.items():
        if marker in template:
            return cls(tokenizer, tool_format)
    raise ValueError(f"no molt renderer matches this tokenizer's chat template; molt has: {', '.join(RENDERERS)}")
