"""A2UI v0.9 answers: valid surfaces of molt's catalog pass the official validator, every kind of
fault is named with its code, surface and place, and the catalog reaches the genui prompt."""

import json

import pytest

from molt.hcp import HCPError, load_hcp, parse_hcp, to_toml
from molt.ui.a2ui import BASIC_CATALOG_ID, CATALOG_ID, button, catalog_document, catalog_prompt, check_answer, surface_messages

ROOT = {"id": "root", "component": "Column", "children": ["name", "save"]}
NAME = {"id": "name", "component": "TextField", "label": "Name", "value": {"path": "/name"}}
SAVE = button("save", "Save", "submit")


def answer(components, data=None, catalog_id=CATALOG_ID) -> str:
    return surface_messages("s", components, data, catalog_id)


def lines(*messages) -> str:
    return "\n".join(json.dumps({"version": "v0.9", **m}) for m in messages)


def test_a_form_passes_and_reads_back():
    checked = check_answer(answer([ROOT, NAME, *SAVE], {"name": ""}))
    assert checked.valid and checked.repairs == []
    surface = checked.surfaces["s"]
    assert surface.catalog_id == CATALOG_ID and surface.data == {"name": ""}
    assert surface.text_of("save") == "Save" and [c.id for c in surface.of("TextField")] == ["name"]


def test_table_and_chart_of_the_molt_catalog():
    table = {"id": "t", "component": "Table", "columns": ["City", "Rain"], "rows": [["Oslo", 12], ["Rome", 3]]}
    chart = {"id": "c", "component": "Chart", "kind": "bar", "labels": ["Mon", "Tue"], "series": [{"name": "mm", "values": [1, 2.5]}]}
    root = {"id": "root", "component": "Column", "children": ["t", "c"]}
    assert check_answer(answer([root, table, chart])).valid
    pie = check_answer(answer([root, table, {**chart, "kind": "pie"}]))
    assert not pie.valid and pie.problems[0].path.endswith("components.c.kind")
    # the basic catalog has no Table: a surface created with it may not use one
    basic = check_answer(answer([root, table, chart], catalog_id=BASIC_CATALOG_ID))
    assert basic.problems[0].code == "unrecognized_component"


@pytest.mark.parametrize(
    "text, code, path",
    [
        ("{oops", "invalid_json", "line 1"),
        ("", "empty", ""),
        ("[1, 2]", "invalid_message", "messages[0]"),
        (answer([ROOT, NAME, *SAVE, {"id": "x", "component": "Banner"}]), "unrecognized_component", "messages[1].components.x.component"),
        (answer([{**ROOT, "children": ["name", "save", "gone"]}, NAME, *SAVE], {"name": ""}), "integrity", "messages[1]"),
        (answer([ROOT, NAME, *SAVE, {"id": "lost", "component": "Text", "text": "?"}], {"name": ""}), "integrity", "messages[1]"),
        (answer([NAME, *SAVE], {"name": ""}), "integrity", "messages[1]"),
        (answer([ROOT, {"id": "name", "component": "Card", "child": "root"}, *SAVE]), "recursion", "messages[1]"),
        (answer([ROOT, NAME, *SAVE], {"nom": ""}), "unbound_path", "components.name.value"),
        (answer([ROOT, NAME, {"id": "save", "component": "Button", "child": "save_label", "action": {"name": "submit"}}, SAVE[1]], {"name": ""}), "missing_field", "messages[1].components.save"),
        (lines({"createSurface": {"surfaceId": "s", "catalogId": CATALOG_ID}}), "no_components", ""),
        (lines({"createSurface": {"surfaceId": "s", "catalogId": "urn:other"}}), "catalog", "messages[0]"),
        (json.dumps({"createSurface": {"surfaceId": "s", "catalogId": CATALOG_ID}}), "missing_field", "messages[0]"),
        (lines({"updateComponents": {"surfaceId": "nowhere", "components": [ROOT]}}), "integrity", "messages[0]"),
    ],
)
def test_each_fault_is_named(text, code, path):
    checked = check_answer(text)
    assert not checked.valid
    [problem] = checked.problems
    assert problem.code == code and problem.path.startswith(path), problem
    assert set(problem.as_dict()) == {"code", "surfaceId", "path", "message"} and problem.message


def test_a_code_fence_is_a_reported_repair():
    checked = check_answer("```json\n" + answer([ROOT, NAME, *SAVE], {"name": ""}) + "\n```")
    assert checked.valid and checked.repairs == ["removed a code fence around the messages"]


def test_a_list_or_a_messages_wrapper_reads_the_same():
    messages = [json.loads(line) for line in answer([ROOT, NAME, *SAVE], {"name": ""}).splitlines()]
    assert check_answer(json.dumps(messages)).messages == messages
    assert check_answer(json.dumps({"messages": messages})).messages == messages


def test_the_catalog_reaches_the_genui_prompt():
    document = catalog_document()
    assert document["catalogId"] == CATALOG_ID and {"Table", "Chart", "Button", "CheckBox"} <= set(document["components"])
    assert "Table(columns, rows, caption?)" in catalog_prompt() and "Table" not in catalog_prompt(BASIC_CATALOG_ID)
    prompt = load_hcp().system_prompt("genui")
    assert CATALOG_ID in prompt and "Chart(kind, labels, series, title?)" in prompt and "{catalog}" not in prompt


def test_the_hcp_names_a_known_catalog():
    data = load_hcp().model_dump(mode="json")
    data["ui"]["catalog"] = "urn:nowhere"
    with pytest.raises(HCPError, match="unknown UI catalog 'urn:nowhere'"):
        parse_hcp(data)
    data["ui"]["catalog"] = BASIC_CATALOG_ID
    basic = parse_hcp(data)
    assert "Table(" not in basic.system_prompt("genui") and BASIC_CATALOG_ID in to_toml(basic)
