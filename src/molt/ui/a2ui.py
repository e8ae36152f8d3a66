"""A2UI v0.9 surfaces: molt's catalog, a model's answer read as messages, and the check every
surface passes before it reaches a client.

An answer is a stream of A2UI server-to-client messages, one JSON object per line (``createSurface``,
``updateComponents``, ``updateDataModel``, ``deleteSurface``). Validation is the official SDK's
(``a2ui-core``, strict): the message schemas, every component against its catalog schema, unique ids,
a root, no dangling references, orphans or cycles. molt adds what the SDK leaves to the renderer:
a created surface has components, and every input's bound path exists in the surface's data model.

The molt catalog (``molt_catalog.json``) is the A2UI basic catalog plus Table and Chart, declared as
JSON Schema and loaded by the SDK. Each problem is ``{code, surfaceId, path, message}``: what goes back
to the model for a repair, and what a client reports.
"""

import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from a2ui.core import STRICT_VALIDATION, A2uiError, Catalog, MessageProcessor, MessageProcessorOptions
from a2ui.core.basic_catalog import BasicCatalog

VERSION = "v0.9"
CATALOG_ID = "urn:molt:a2ui:catalog:1"
BASIC_CATALOG_ID = "https://a2ui.org/specification/v0_9/catalogs/basic/catalog.json"
INPUTS = ("TextField", "CheckBox", "ChoicePicker", "DateTimeInput", "Slider")
"""Components whose ``value`` the user edits: a binding must point into the data model."""
FENCE = re.compile(r"^```(?:json|jsonl)?\s*\n(.*?)\n?```$", re.DOTALL)


@cache
def catalogs() -> tuple[Catalog, Catalog]:
    """(molt's catalog, the basic one). molt's keeps the basic components' own validators."""
    basic = BasicCatalog(VERSION)
    document = json.loads(resources.files("molt.ui").joinpath("molt_catalog.json").read_text())
    extra = Catalog.from_json(document, protocol_version=VERSION)
    molt = Catalog(catalog_id=CATALOG_ID, protocol_version=VERSION, components=[*basic.components.values(), *extra.components.values()], functions=list(basic.functions.values()))
    return molt, basic


def catalog_ids() -> tuple[str, ...]:
    return tuple(c.catalog_id for c in catalogs())


def catalog_document(catalog_id: str = CATALOG_ID) -> dict[str, Any]:
    """A catalog as the JSON document a renderer or another agent reads."""
    return next(c for c in catalogs() if c.catalog_id == catalog_id).to_json()


@dataclass(frozen=True)
class Problem:
    code: str
    surface_id: str | None
    path: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "surfaceId": self.surface_id, "path": self.path, "message": self.message}

    def __str__(self) -> str:
        where = f"{self.surface_id or '-'} {self.path}".strip()
        return f"{self.code} at {where}: {self.message}"


@dataclass(frozen=True)
class Component:
    id: str
    name: str
    properties: dict[str, Any]


@dataclass
class Surface:
    """What a client would hold after the messages: components by id and the data model."""

    id: str
    catalog_id: str
    components: dict[str, Component] = field(default_factory=dict)
    data: Any = None

    def text_of(self, component_id: str) -> str:
        """A component's visible words: its text or label; a button's, its child's."""
        c = self.components.get(component_id)
        if c is None:
            return ""
        if c.name == "Button":
            return self.text_of(c.properties.get("child", ""))
        value = c.properties.get("text", c.properties.get("label", ""))
        return value if isinstance(value, str) else ""

    def of(self, *names: str) -> list[Component]:
        return [c for c in self.components.values() if c.name in names]

    def under(self, component_id: str) -> list[Component]:
        """Components below ``component_id`` (a valid surface has no cycles)."""
        found = []
        c = self.components.get(component_id)
        for child in children_of(c) if c else []:
            if child in self.components:
                found += [self.components[child], *self.under(child)]
        return found


@dataclass(frozen=True)
class Checked:
    """An answer read as messages and checked; ``repairs`` are the JSON slips fixed on the way."""

    messages: list[dict]
    problems: list[Problem]
    repairs: list[str]
    surfaces: dict[str, Surface]

    @property
    def valid(self) -> bool:
        return bool(self.messages) and not self.problems


def children_of(component: Component) -> list[str]:
    p = component.properties
    ids = [p["child"]] if isinstance(p.get("child"), str) else []
    ids += [p[k] for k in ("trigger", "content") if isinstance(p.get(k), str)]
    ids += [i for i in p.get("children", []) if isinstance(i, str)] if isinstance(p.get("children"), list) else []
    ids += [t["child"] for t in p.get("tabs", []) if isinstance(t, dict) and isinstance(t.get("child"), str)]
    return ids


def parse_messages(text: str) -> tuple[list[dict], list[str], list[Problem]]:
    """JSON values one after another (one per line, as A2UI streams them), a JSON list of them,
    or ``{"messages": [...]}``. A code fence around them is a trivial slip, removed and reported."""
    repairs = []
    text = text.strip()
    fenced = FENCE.match(text)
    if fenced:
        text, repairs = fenced.group(1).strip(), ["removed a code fence around the messages"]
    decoder, values, at = json.JSONDecoder(), [], 0
    while at < len(text):
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError as e:
            line = text.count("\n", 0, e.pos) + 1
            return [], repairs, [Problem("invalid_json", None, f"line {line}", f"{e.msg} (character {e.pos - text.rfind(chr(10), 0, e.pos)} of line {line})")]
        values.append(value)
        at = end
        while at < len(text) and text[at].isspace():
            at += 1
    if len(values) == 1 and isinstance(values[0], list):
        values = values[0]
    elif len(values) == 1 and isinstance(values[0], dict) and set(values[0]) == {"messages"} and isinstance(values[0]["messages"], list):
        values = values[0]["messages"]
    if not values:
        return [], repairs, [Problem("empty", None, "", "no A2UI message in the answer")]
    wrong = next((i for i, v in enumerate(values) if not isinstance(v, dict)), None)
    if wrong is not None:
        return [], repairs, [Problem("invalid_message", None, f"messages[{wrong}]", "each A2UI message is a JSON object")]
    return values, repairs, []


def surface_messages(surface_id: str, components: list[dict], data: dict | None = None, catalog_id: str = CATALOG_ID) -> str:
    """One surface as the lines of an answer: createSurface, updateComponents, then (when there is
    data) updateDataModel."""
    messages = [{"createSurface": {"surfaceId": surface_id, "catalogId": catalog_id}}, {"updateComponents": {"surfaceId": surface_id, "components": components}}]
    if data:
        messages.append({"updateDataModel": {"surfaceId": surface_id, "value": data}})
    return "\n".join(json.dumps({"version": VERSION, **m}, ensure_ascii=False) for m in messages)


def button(component_id: str, label: str, event: str) -> list[dict]:
    """A Button and the Text it shows (A2UI buttons hold a child, not a label)."""
    return [{"id": component_id, "component": "Button", "child": f"{component_id}_label", "action": {"event": {"name": event}}},
            {"id": f"{component_id}_label", "component": "Text", "text": label}]


def surface_id_of(message: dict) -> str | None:
    body = next((v for k, v in message.items() if k != "version"), None)
    return body.get("surfaceId") if isinstance(body, dict) else None


def check_messages(messages: list[dict], prior: list[dict] = ()) -> tuple[list[Problem], dict[str, Surface]]:
    """Problems of ``messages`` as one stream (the SDK stops at the first), and the surfaces they
    build. ``prior``: the valid messages the client already holds (earlier answers), applied first,
    so an answer may update a surface made before."""
    processor = MessageProcessor(list(catalogs()), options=MessageProcessorOptions(validation_config=STRICT_VALIDATION))
    for message in prior:
        try:
            processor.process_messages([message])
        except A2uiError:
            continue  # what a client could not apply either
    for i, message in enumerate(messages):
        try:
            processor.process_messages([message])
        except A2uiError as e:
            return [sdk_problem(e, i, surface_id_of(message))], {}
    touched = {surface_id_of(m) for m in messages}
    surfaces = {}
    for surface_id, model in list(processor.model.surfaces_map.items()):
        components = {c.id: Component(c.id, c.type, dict(c.properties)) for c in model.components_model.values}
        surfaces[surface_id] = Surface(surface_id, model.catalog.catalog_id, components, model.data_model.get("/"))
        if surface_id not in touched:
            continue
        if not components:
            return [Problem("no_components", surface_id, "", "the surface was created but no updateComponents gave it components")], {}
        for c in components.values():
            bound = c.properties.get("value")
            if c.name in INPUTS and isinstance(bound, dict) and isinstance(bound.get("path"), str) and not model.data_model.has_path(bound["path"]):
                return [Problem("unbound_path", surface_id, f"components.{c.id}.value", f"{bound['path']} is not in the surface's data model; set it with updateDataModel")], {}
    return [], surfaces


def sdk_problem(error: A2uiError, index: int, surface_id: str | None) -> Problem:
    code = re.sub(r"(?<!^)(?=[A-Z])", "_", type(error).__name__.removeprefix("A2ui").removesuffix("Error")).lower() or "invalid"
    details = getattr(error, "details", None) or []
    if details:
        first = details[0]
        return Problem(first.code or code, surface_id, f"messages[{index}].{first.path}", first.message)
    return Problem(code, surface_id, f"messages[{index}]", str(error))


def check_answer(text: str, prior: list[dict] = ()) -> Checked:
    """A model's answer read as A2UI messages and checked (after ``prior``, the messages the
    client already holds); nothing invalid should reach a client."""
    messages, repairs, problems = parse_messages(text)
    if problems:
        return Checked([], problems, repairs, {})
    problems, surfaces = check_messages(messages, prior)
    return Checked(messages, problems, repairs, surfaces)


# -- client actions and what a model may see of them ---------------------------------------------

WITHHELD = "[withheld: private to the user]"


def client_action(text: str) -> dict | None:
    """The action of an A2UI client-to-server message (``{"version": "v0.9", "action": {name,
    surfaceId, sourceComponentId, timestamp, context}}``), or None when ``text`` is not one."""
    from a2ui.core.schema.v0_9 import A2uiClientActionMessage
    from pydantic import ValidationError

    if not text.lstrip().startswith("{") or '"action"' not in text:
        return None
    try:
        message = A2uiClientActionMessage.model_validate_json(text)
    except ValidationError:
        return None
    return message.model_dump(by_alias=True, mode="json")["action"]


def private_paths(surface: Surface) -> set[str]:
    """Data paths bound by inputs inside a ``Private`` component: the user's alone (NoAI)."""
    paths = set()
    for holder in surface.of("Private"):
        for c in surface.under(holder.id):
            bound = c.properties.get("value")
            if isinstance(bound, dict) and isinstance(bound.get("path"), str):
                paths.add(bound["path"])
    return paths


def is_private(path: str, private: set[str]) -> bool:
    return any(path == p or path.startswith(p.rstrip("/") + "/") or p.startswith(path.rstrip("/") + "/") for p in private)


def model_view_of_action(action: dict, surface: Surface | None) -> dict:
    """The action as a model may see it. Only context keys the source component's action declares
    come through, and those bound to private data are withheld (NoAI): what the client sends beyond
    its surface's declaration cannot be told apart from private data, so it is dropped."""
    source = surface.components.get(action.get("sourceComponentId", "")) if surface else None
    declared = ((source.properties.get("action") or {}).get("event") or {}).get("context") or {} if source else {}
    private = private_paths(surface) if surface else set()
    context = {}
    for key, value in (action.get("context") or {}).items():
        if key not in declared:
            continue
        binding = declared[key]
        bound = binding.get("path") if isinstance(binding, dict) else None
        context[key] = WITHHELD if isinstance(bound, str) and is_private(bound, private) else value
    return {**action, "context": context}


@cache
def catalog_prompt(catalog_id: str = CATALOG_ID) -> str:
    """A catalog in one line for the genui prompt: each component and its properties (required
    ones first, optional ones marked ?). A small model learns the shapes in training; this names them."""
    lines = []
    for name, schema in catalog_document(catalog_id)["components"].items():
        schema = component_schema(schema)
        required = [p for p in schema["required"] if p != "component"]
        optional = [p for p in schema["properties"] if p not in required and p not in ("component", "accessibility", "weight", "checks")]
        lines.append(f"{name}({', '.join(required + [p + '?' for p in optional])})")
    return "; ".join(lines)


def component_schema(schema: dict) -> dict:
    """Properties and required names of one catalog entry (flattening the basic catalog's allOf)."""
    properties, required = dict(schema.get("properties", {})), list(schema.get("required", []))
    for part in schema.get("allOf", []):
        properties |= part.get("properties", {})
        required += part.get("required", [])
    return {"properties": properties, "required": required}
