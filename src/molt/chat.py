"""``molt chat``: talk to a base model, one message or a session, with plain transformers generate.

This is the simplest correct path from messages to an answer (renderer → generate → parse); the
engine serves the same renderer at speed. Knows nothing of adapters or routing.
"""

import sys
from collections.abc import Callable
from dataclasses import dataclass

import torch
from rich.console import Console
from transformers import GenerationConfig, TextStreamer

from molt.models import LoadedModel
from molt.models.renderer import Message, ParsedResponse, Renderer, get_renderer

HELP = "Commands: /reset clears the conversation, /exit (or Ctrl-D) leaves."


@dataclass(frozen=True)
class ChatSettings:
    max_tokens: int = 256
    """Most tokens in one answer."""
    temperature: float = 0.0
    """0 is greedy (deterministic); higher samples more freely."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability sums to this."""
    seed: int = 0
    """Seed for sampling, so a sampled answer can be reproduced."""
    system: str | None = None
    """System prompt; None keeps the model's default."""


class _CallbackStreamer(TextStreamer):
    """transformers' word-boundary-aware text streamer, sending text to a callback instead of stdout."""

    def __init__(self, renderer: Renderer, on_text: Callable[[str], None]):
        super().__init__(renderer.tokenizer, skip_prompt=True, skip_special_tokens=True)
        self.on_text = on_text

    def on_finalized_text(self, text: str, stream_end: bool = False) -> None:
        if text:
            self.on_text(text)


def reply(
    loaded: LoadedModel,
    renderer: Renderer,
    messages: list[Message],
    settings: ChatSettings = ChatSettings(),
    on_text: Callable[[str], None] | None = None,
) -> ParsedResponse:
    """Generate the next assistant message; ``on_text`` receives the text as it is produced."""
    prompt = torch.tensor([renderer.generation_prompt(messages)])
    sampling = settings.temperature > 0
    config = GenerationConfig(
        max_new_tokens=settings.max_tokens,
        do_sample=sampling,
        temperature=settings.temperature if sampling else None,
        top_p=settings.top_p if sampling else None,
        top_k=None,
        eos_token_id=renderer.stop_token_ids,
        pad_token_id=renderer.stop_token_ids[0],
    )
    streamer = _CallbackStreamer(renderer, on_text) if on_text else None
    torch.manual_seed(settings.seed)
    with torch.inference_mode():
        output = loaded.model.generate(
            prompt, attention_mask=torch.ones_like(prompt), generation_config=config, streamer=streamer
        )
    return renderer.parse_response(output[0, prompt.shape[1] :].tolist())


class ChatSession:
    """A conversation held in memory; each ``ask`` appends the user turn and the answer."""

    def __init__(self, loaded: LoadedModel, settings: ChatSettings = ChatSettings()):
        self.loaded, self.settings = loaded, settings
        self.renderer = get_renderer(loaded.tokenizer)
        self.messages: list[Message] = []
        self.reset()

    def reset(self) -> None:
        self.messages = [{"role": "system", "content": self.settings.system}] if self.settings.system else []

    def ask(self, text: str, on_text: Callable[[str], None] | None = None) -> ParsedResponse:
        turn = [*self.messages, {"role": "user", "content": text}]
        answer = reply(self.loaded, self.renderer, turn, self.settings, on_text)
        self.messages = [*turn, answer.message]
        return answer


def interactive(session: ChatSession, console: Console) -> None:
    """Read questions until /exit or end of input; works on a terminal and on piped input."""
    tty = sys.stdin.isatty()
    if tty:
        console.print(f"[dim]{HELP}[/]")
    while True:
        try:
            text = console.input("[bold cyan]you ›[/] ") if tty else sys.stdin.readline()
        except (EOFError, KeyboardInterrupt):
            break
        if not tty and not text:
            break
        text = text.strip()
        if text in ("/exit", "/quit"):
            break
        if text == "/reset":
            session.reset()
            console.print("[dim]conversation cleared[/]")
        elif text == "/help":
            console.print(HELP)
        elif text:
            if not tty:
                console.print(f"[bold cyan]you ›[/] {text}")
            stream_answer(session, text, console)


def stream_answer(session: ChatSession, text: str, console: Console) -> ParsedResponse:
    console.print("[bold green]molt ›[/] ", end="")
    answer = session.ask(text, on_text=lambda chunk: console.print(chunk, end="", markup=False, highlight=False))
    console.print()
    if not answer.complete:
        console.print(f"[dim](stopped at --max-tokens {session.settings.max_tokens})[/]")
    return answer
