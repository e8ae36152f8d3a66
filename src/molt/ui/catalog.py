"""The component catalog the renderer owns, and the check every model surface passes first.

A surface is one A2UI-style message (v0.9 wire names): ``{"version": "v0.9", "createSurface":
{surfaceId, catalogId, components, dataModel}}``. Components are a flat list linked by id (the
one with id ``root`` is drawn first); inputs bind to the data model by JSON Pointer
(``{"path": "/email"}``), and buttons name an action. Validation is JSON Schema (Draft 2020-12,
the ``jsonschema`` package) and then the references a schema cannot express: unique ids, a
root, children that exist, no cycles, bound paths that exist in the data model. Each problem is
one message with a JSON path, so it can go back to the model for a repair.
"""

import json
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

CATALOG_ID = "molt:basic/v1"
VERSION = "v0.9"


def component(name: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "object",
        "properties": {"id": {"type": "string", "minLength": 1}, "component": {"const": name}, **properties},
        "required": ["id", "component", *required],
        "additionalProperties": False,
    }


CHILDREN = {"type": "array", "items": {"type": "string"}, "minItems": 1}
TEXT = {"type": "string", "minLength": 1}
BINDING = {"type": "object", "properties": {"path": {"type": "string", "pattern": "^(/[^/]+)+$"}}, "required": ["path"], "additionalProperties": False}
COMPONENTS = {
    "Column": component("Column", {"children": CHILDREN}, ["children"]),
    "Row": component("Row", {"children": CHILDREN}, ["children"]),
    "Card": component("Card", {"children": CHILDREN}, ["children"]),
    "Text": component("Text", {"text": TEXT, "variant": {"enum": ["h1", "h2", "body", "caption"]}}, ["text"]),
    "TextField": component("TextField", {"label": TEXT, "value": BINDING}, ["label", "value"]),
    "Checkbox": component("Checkbox", {"label": TEXT, "value": BINDING}, ["label", "value"]),
    "ChoicePicker": component("ChoicePicker", {"label": TEXT, "options": {"type": "array", "items": TEXT, "minItems": 2}, "value": BINDING}, ["label", "options", "value"]),
    "DateTimeInput": component("DateTimeInput", {"label": TEXT, "value": BINDING}, ["label", "value"]),
    "Button": component("Button", {"label": TEXT, "action": {"type": "object", "properties": {"name": TEXT}, "required": ["name"], "additionalProperties": False}}, ["label", "action"]),
}
SURFACE_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "version": {"const": VERSION},
        "createSurface": {
            "type": "object",
            "properties": {
                "surfaceId": TEXT,
                "catalogId": {"const": CATALOG_ID},
                "components": {"type": "array", "items": {"oneOf": list(COMPONENTS.values())}, "minItems": 1},
                "dataModel": {"type": "object"},
            },
            "required": ["surfaceId", "catalogId", "components"],
            "additionalProperties": False,
        },
    },
    "required": ["version", "createSurface"],
    "additionalProperties": False,
}
VALIDATOR = Draft202012Validator(SURFACE_SCHEMA)


@dataclass(frozen=True)
class SurfaceCheck:
    surface: dict | None
    errors: list[str]

    @property
    def valid(self) -> bool:
        return not self.errors


def check_surface(text: str) -> SurfaceCheck:
    """Parse and validate a model's answer; every problem is reported, none is silently fixed."""
    try:
        surface = json.loads(text)
    except json.JSONDecodeError as e:
        return SurfaceCheck(None, [f"not JSON: {e.msg} at char {e.pos}"])
    errors = [f"{error.json_path}: {error.message[:200]}" for error in VALIDATOR.iter_errors(surface)]
    if not errors:
        errors = reference_errors(surface["createSurface"])
    return SurfaceCheck(surface, errors)


def reference_errors(create: dict[str, Any]) -> list[str]:
    components = create["components"]
    ids = [c["id"] for c in components]
    errors = [f"$.components: id {i!r} is used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    by_id = {c["id"]: c for c in components}
    if "root" not in by_id:
        errors.append('$.components: no component has id "root"')
    for c in components:
        errors += [f"$.components[{c['id']}].children: no component {child!r}" for child in c.get("children", []) if child not in by_id]
        path = c.get("value", {}).get("path")
        if path is not None and not pointer_exists(create.get("dataModel", {}), path):
            errors.append(f"$.components[{c['id']}].value: {path} is not in the data model")
    if not errors and has_cycle(by_id):
        errors.append("$.components: children form a cycle")
    return errors


def pointer_exists(document: Any, pointer: str) -> bool:
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(document, dict) or part not in document:
            return False
        document = document[part]
    return True


def has_cycle(by_id: dict[str, dict]) -> bool:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(node: str) -> bool:
        if state.get(node) == 1:
            return True
        if state.get(node) == 2:
            return False
        state[node] = 1
        found = any(visit(child) for child in by_id[node].get("children", []))
        state[node] = 2
        return found

    return any(visit(node) for node in by_id)
