"""The UI catalog check: valid surfaces pass, and every kind of fault is named with its place."""

import json

from molt.ui.catalog import CATALOG_ID, check_surface


def surface(components, data=None):
    body = {"surfaceId": "s", "catalogId": CATALOG_ID, "components": components}
    if data is not None:
        body["dataModel"] = data
    return json.dumps({"version": "v0.9", "createSurface": body})


ROOT = {"id": "root", "component": "Column", "children": ["name"]}
NAME = {"id": "name", "component": "TextField", "label": "Name", "value": {"path": "/name"}}


def test_a_valid_surface_passes():
    assert check_surface(surface([ROOT, NAME], {"name": ""})).valid


def test_faults_are_reported():
    cases = {
        "not JSON": "{oops",
        "is not valid under any": surface([ROOT, {"id": "name", "component": "Slider"}], {}),
        "no component 'name'": surface([ROOT], {}),
        "no component has id \"root\"": surface([NAME], {"name": ""}),
        "/name is not in the data model": surface([ROOT, NAME], {}),
        "used twice": surface([ROOT, NAME, NAME], {"name": ""}),
        "cycle": surface([ROOT, {"id": "name", "component": "Card", "children": ["root"]}], {}),
        "'version' is a required property": json.dumps({"createSurface": {}}),
    }
    for expected, text in cases.items():
        check = check_surface(text)
        assert not check.valid
        assert any(expected in error for error in check.errors), (expected, check.errors)
