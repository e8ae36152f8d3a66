"""The OpenAI chat shapes molt renders: messages (with text parts and tool calls) and function
tools, as pydantic models. The engine's and the proxy's request bodies check them at the edge,
so a malformed message is a 400 that names where it is wrong, never a crash further in; the
renderer checks training data with the same models.

Checked values stay the plain dicts they came as (the rest of molt passes messages as JSON-shaped
data); fields these models do not name pass through, as OpenAI adds new ones.
"""

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

ROLES = ("system", "user", "assistant", "tool")


class Shape(BaseModel):
    model_config = ConfigDict(extra="allow")


def text_content(content: Any) -> Any:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str) for p in content):
        return content
    raise ValueError("must be a string, null, or a list of {'type': 'text', 'text': ...} parts")


def string_or_object(arguments: Any) -> Any:
    if not isinstance(arguments, str | dict):
        raise ValueError("must be a JSON string (or an object)")
    return arguments


class FunctionCall(Shape):
    name: str = Field(min_length=1)
    arguments: Annotated[Any, AfterValidator(string_or_object)] = "{}"
    """OpenAI sends a JSON string; molt's own data may hold the object."""


class ToolCall(Shape):
    id: str | None = None
    type: Literal["function"] = "function"
    function: FunctionCall


class ChatMessage(Shape):
    role: Literal[ROLES]
    content: Annotated[Any, AfterValidator(text_content)] = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None
    trainable: bool | None = None
    """molt's one field: overrides which turns get training weight."""


class FunctionSpec(Shape):
    name: str = Field(min_length=1)
    description: str | None = None
    parameters: dict[str, Any] | None = None


class FunctionTool(Shape):
    type: Literal["function"]
    function: FunctionSpec


UNION_TAGS = {"str", "int", "float", "bool", "none", "dict", "list"}


def is_union_tag(part: str | int) -> bool:
    """pydantic names each member a value failed in a union (``str``, ``list[dict[str,any]]``);
    those are not fields a client sent."""
    return isinstance(part, str) and (part in UNION_TAGS or "[" in part or "(" in part)


def first_problem(error: ValidationError | list[dict], where: str = "") -> str:
    """One line naming the first wrong field, e.g. ``messages[2].content: Input should be ...``.
    A check of molt's own (a value error, which names its field) wins over a type mismatch, and
    of a union's failures the deepest says most (``content[0].text`` over ``content``)."""
    problems = error.errors(include_url=False) if isinstance(error, ValidationError) else error
    problem = next((p for p in problems if p["type"] == "value_error"), None) or max(problems, key=lambda p: len(p["loc"]))
    message = problem["msg"].removeprefix("Value error, ").split(" or instance of ")[0]
    path = where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in problem["loc"] if not is_union_tag(part))
    path = path.lstrip(".")
    if not path or message.startswith(path):
        return message
    return f"{path}: {message}"


def checker(shape: Any, where: str = ""):
    """A function that returns its value unchanged if it fits ``shape``, else raises ValueError
    saying what is wrong, under ``where`` unless the call names another place (an
    ``AfterValidator`` turns that into the field's 400)."""
    adapter = TypeAdapter(shape)

    def check(value: Any, at: str = where) -> Any:
        try:
            adapter.validate_python(value)
        except ValidationError as e:
            raise ValueError(first_problem(e, at)) from None
        return value

    return check


check_message = checker(ChatMessage)
check_messages = checker(list[ChatMessage], "messages")
check_tools = checker(list[FunctionTool], "tools")

Messages = Annotated[list[dict[str, Any]], Field(min_length=1), AfterValidator(check_messages)]
"""A request's ``messages``: OpenAI chat messages, checked, kept as dicts."""
Tools = Annotated[list[dict[str, Any]], AfterValidator(check_tools)]
"""A request's ``tools``: OpenAI function tools, checked, kept as dicts."""
