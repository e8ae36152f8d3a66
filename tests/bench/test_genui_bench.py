"""``molt bench genui``'s checks can pass and can fail: reference answers of every kind validate,
render in Chromium and work when used; broken ones are caught, each by the column meant to catch
it. The model is out of the loop here (``molt bench genui`` runs it). Run:
pytest tests/bench/test_genui_bench.py"""

import json
import shutil

import pytest

from molt.bench.genui import STILL, Outcome, browse, checked_outcome, summary
from molt.families import FAMILIES
from molt.http_server import ServerThread
from molt.stack import proxy_with_page
from scripted_engine import ScriptedEngine
from scripted_stack import hcp

GENUI = FAMILIES["genui"]
CASES = GENUI.generate("heldout", 18, 0)


def reply(content: str, repairs: int | None = 0, slip: bool = False, specialist: str = "genui") -> dict:
    checks = {} if repairs is None else {"checks": {"surface": {"outcome": "valid", "repairs": repairs, "slip_fixed": slip}}}
    return {"choices": [{"message": {"role": "assistant", "content": content}}], "molt": {"specialist": specialist, **checks}}


def in_browser(outcomes: dict[str, list[Outcome]], cases=CASES) -> dict:
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        pytest.skip("no Chromium on this machine (`make services` installs Debian's chromium)")
    with ScriptedEngine([]) as engine_url, ServerThread(proxy_with_page(hcp(engine_url))) as url:
        return browse(url, cases, outcomes, console=None)


def test_reference_answers_of_every_kind_pass_every_column():
    outcomes = {"reference": [checked_outcome(case, reply(case.answer["content"])) for case in CASES]}
    reached = in_browser(outcomes)
    assert {c.check["kind"] for c in CASES} == {"form", "picker", "checklist", "card", "confirm", "table", "chart", "wizard", "edit"}
    assert reached == {"reference": 18, "reference_validates": 18}
    for case, outcome in zip(CASES, outcomes["reference"]):
        assert (outcome.valid_first_try, outcome.valid_after_repair, outcome.renders, outcome.constraints) == (True, True, True, True), (case.check["kind"], outcome.note)
        assert outcome.interactions is (None if case.check["kind"] in STILL else True), (case.check["kind"], outcome.note)
    assert summary(outcomes)["reference"] == {"valid_first_try": 1.0, "valid_after_repair": 1.0, "renders": 1.0, "constraints": 1.0, "interactions": 1.0, "routed_to_genui": 1.0}


def test_each_column_catches_what_it_is_for():
    form = next(c for c in CASES if c.check["kind"] == "form")
    lines = [json.loads(line) for line in form.answer["content"].splitlines()]
    components = lines[1]["updateComponents"]["components"]
    unlabelled = [{**c, "label": ""} if c["component"] == "TextField" else c for c in components]
    no_label = "\n".join(json.dumps(m) for m in [lines[0], {**lines[1], "updateComponents": {**lines[1]["updateComponents"], "components": unlabelled}}, lines[2]])
    answers = {
        "repaired": reply(form.answer["content"], repairs=1),
        "fenced": reply(form.answer["content"], slip=True),
        "prose": reply("Here is your form: name, email.", repairs=None, specialist="chat"),
        "no_label": reply(no_label),
    }
    outcomes = {name: [checked_outcome(form, r)] for name, r in answers.items()}
    in_browser(outcomes, [form])
    repaired, fenced, prose, no_label = (outcomes[n][0] for n in answers)
    assert (repaired.valid_first_try, repaired.valid_after_repair, repaired.renders, repaired.interactions, repaired.constraints) == (False, True, True, True, True)
    assert (fenced.valid_first_try, fenced.valid_after_repair) == (False, True)
    assert (prose.valid_after_repair, prose.renders, prose.constraints, prose.note) == (False, False, False, "not a surface")
    # drawn, but its fields cannot be found by a label (nor used by a screen reader): interactions and constraints fail
    assert (no_label.valid_after_repair, no_label.renders, no_label.interactions, no_label.constraints) == (True, True, False, False)
    assert summary(outcomes)["prose"]["routed_to_genui"] == 0.0
