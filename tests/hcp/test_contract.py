"""HCP v1: the shipped file, the version registry, schema errors, show and diff.
Run: pytest tests/hcp/test_contract.py"""

import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from molt.cli import app
from molt.hcp import VERSIONS, HCPError, default_hcp_path, diff_hcp, load_hcp, parse_hcp, to_toml


def default_data() -> dict:
    return tomllib.loads(default_hcp_path().read_text())


def test_the_shipped_hcp_is_valid_and_round_trips_through_show():
    hcp = load_hcp()
    assert hcp.hcp_version == "1" and [s.label for s in hcp.specialists] == ["chat", "agent", "coding", "genui"]
    assert hcp.router.default_label == "chat" and hcp.tools.call_format == "hermes"
    assert parse_hcp(tomllib.loads(to_toml(hcp))) == hcp


@pytest.mark.parametrize("change,message", [
    ({"hcp_version": "9"}, "unknown hcp_version '9'; supported versions: 1"),
    ({"hcp_version": None}, "hcp_version is required"),
    ({"router": {"default_label": "sales"}}, "router.default_label is 'sales', not a specialist label"),
    ({"router": {"default_label": "chat", "scorer": "nobody"}}, "router.scorer is 'nobody'"),
    ({"model": {"context_window": 10}}, "model.context_window: Input should be greater than or equal to 256"),
    ({"model": {"engine": "http://x"}}, "model.engine: Extra inputs are not permitted"),
    ({"tools": {"call_format": "xml"}}, "unknown tool-call format 'xml'"),
    ({"environment": {"secrets": ["sk-live-1234567890"]}}, "never values"),
    ({"environment": {"api_key_env": "hunter2"}}, "never values"),
    ({"prompts": {"identity": "x", "summary": "y", "route": "Label for: {user_text}"}}, "route prompt lacks {labels}, {descriptions}"),
    ({"specialists": [{"label": "chat", "description": "a"}, {"label": "chat", "description": "b"}]}, "repeated: chat"),
    ({"specialists": [{"label": "Chat!", "description": "a"}]}, r"specialists[0].label: String should match pattern"),
])
def test_schema_errors_name_the_field(change, message):
    data = default_data()
    for key, value in change.items():
        if value is None:
            data.pop(key)
        else:
            data[key] = value
    with pytest.raises(HCPError) as error:
        parse_hcp(data, "test.toml")
    assert str(error.value).startswith("test.toml: ") and message in str(error.value)


def test_file_errors(tmp_path: Path):
    with pytest.raises(HCPError, match="no such file"):
        load_hcp(tmp_path / "absent.toml")
    (tmp_path / "bad.toml").write_text('hcp_version = "1"\nname = \n')
    with pytest.raises(HCPError, match=r"bad\.toml: not valid TOML: .*line 2"):
        load_hcp(tmp_path / "bad.toml")


def test_versions_are_an_enumerated_registry():
    assert list(VERSIONS) == ["1"]


def test_diff_matches_specialists_by_label_and_lists_changes():
    a = load_hcp()
    data = default_data()
    data["specialists"] = list(reversed(data["specialists"]))  # order is not a change
    assert diff_hcp(a, parse_hcp(data)) == []
    data["router"]["margin"] = 1.25
    data["specialists"] = [s for s in data["specialists"] if s["label"] != "genui"]
    data["specialists"][0]["adapter"] = "coding-v2"
    lines = diff_hcp(a, parse_hcp(data))
    assert "~ router.margin: 0.5 → 1.25" in lines
    assert "- specialists.genui.label = 'genui'" in lines
    assert "~ specialists.coding.adapter: None → 'coding-v2'" in lines


def test_cli_validate_show_diff(tmp_path: Path):
    runner = CliRunner()
    shown = runner.invoke(app, ["hcp", "show"])
    assert shown.exit_code == 0 and parse_hcp(tomllib.loads(shown.output)) == load_hcp()
    changed = tmp_path / "changed.toml"
    changed.write_text(shown.output.replace("margin = 0.5", "margin = 0.75"))
    assert runner.invoke(app, ["hcp", "validate", str(changed)]).exit_code == 0
    diff = runner.invoke(app, ["hcp", "diff", str(default_hcp_path()), str(changed)])
    assert diff.exit_code == 0 and diff.output.strip() == "~ router.margin: 0.5 → 0.75"
    broken = tmp_path / "broken.toml"
    broken.write_text(shown.output.replace('hcp_version = "1"', 'hcp_version = "2"'))
    result = runner.invoke(app, ["hcp", "validate", str(broken)])
    assert result.exit_code == 2 and "supported versions: 1" in result.output
