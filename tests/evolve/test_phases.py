"""The pieces of a generation that need no model: discovery's variants keep an exact verifier,
failures are attributed by kind, an HCP edit lands in the target's prompt only."""

import json
from collections import Counter
from dataclasses import asdict

from molt.evolve.answering import specialist
from molt.evolve.discovery import OPERATORS, RENAMED_FUNCTIONS, RENAMED_PARAMETERS, UNOFFERED, propose
from molt.evolve.expansion import EDITS, EXAMPLE, Edit, proposals
from molt.evolve.generation import with_kept_edit
from molt.evolve.update import _distinct_per_problem, kind_of, rehearsal
from molt.families import FAMILIES
from molt.families.agent import content_words
from molt.families.agent_functions import HELDOUT_FUNCTIONS, TRAIN_FUNCTIONS, VOCAB
from molt.forge.envs import FamilyDataset
from molt.hcp import load_hcp


def test_every_proposed_variant_is_well_defined_and_harder_in_its_own_way():
    bank = FAMILIES["agent"].generate("train", 30, seed=5)
    variants = propose(bank, per_case=len(OPERATORS), seed=5)
    assert {v.operator for v in variants} == set(OPERATORS)
    for v in variants:
        source = bank[v.source]
        assert FAMILIES["agent"].score(v.case, v.case.answer)["score"] == 1.0  # the verifier still holds
        if v.operator == "distractor_tools":
            assert len(v.case.tools) > len(source.tools) and {t["function"]["name"] for t in source.tools} < {t["function"]["name"] for t in v.case.tools}
        elif v.operator == "earlier_goal":
            assert v.case.messages[-len(source.messages):] == source.messages and len(v.case.messages) == len(source.messages) + 2
        elif v.operator == "restated":
            assert v.case.messages[0]["content"].count(source.messages[0]["content"]) == 2
        elif v.operator == "lifted_constraint":
            rule, request = v.case.messages[0]["content"], v.case.messages[2]["content"]
            assert "don't call any functions" in rule and request.endswith(source.messages[0]["content"]) and v.case.messages[3:] == source.messages[1:]
        elif v.operator == "renamed_schema":  # the same request; every name the answer uses is one the schema gives, none a trained one
            offered = {t["function"]["name"]: set(t["function"]["parameters"]["properties"]) for t in v.case.tools}
            assert v.case.messages[0] == source.messages[0] and not set(offered) & {t["function"]["name"] for t in source.tools}
            assert all(c["name"] in offered and set(c["arguments"]) <= offered[c["name"]] for c in v.case.check.get("calls", []))
            assert FAMILIES["agent"].score(v.case, source.answer)["score"] < 1.0 or not source.answer.get("tool_calls")  # the memorised call fails
        elif v.operator == "unoffered_request":  # a request no offered function serves: the memorised refusal fails, a named one passes
            assert v.case.tools == source.tools and v.case.check["kind"] == "no_call" and v.case.messages[0]["content"] in dict(UNOFFERED)
            assert FAMILIES["agent"].score(v.case, {"role": "assistant", "content": "Sorry, I can't make phone calls with the tools I have here."})["score"] == 0.0
        else:  # hidden_preference: the value is said once, earlier, and only referred to in the request
            (call,) = source.check["calls"]
            request = v.case.messages[-1]["content"]
            value = next(value for name, value in call["arguments"].items() if f"my usual {name.replace('_', ' ')}" in request)
            assert value in v.case.messages[0]["content"] and value not in request and '"my usual' not in request
    assert propose(bank, len(OPERATORS), 5) == variants  # seeded


def test_renamed_functions_are_neither_held_out_nor_trained_names_and_keep_parameters_apart():
    trained, held_out = {f.name for f in TRAIN_FUNCTIONS}, {f.name for f in HELDOUT_FUNCTIONS}
    other_names = [name for names in RENAMED_FUNCTIONS.values() for name in names]
    assert set(RENAMED_FUNCTIONS) == trained and len(set(other_names)) == len(other_names)
    assert not set(other_names) & (trained | held_out)
    parameter_names = [name for names in RENAMED_PARAMETERS.values() for name in names]
    assert len(set(parameter_names)) == len(parameter_names)  # whichever is drawn, two parameters never meet under one name
    for function in TRAIN_FUNCTIONS:
        assert not set(parameter_names) & set(function.properties), function.name


def test_unoffered_requests_share_no_word_with_any_function_or_value():
    """Training on them teaches refusing by naming the request, not a task kind the held-out suite has."""
    said = set()
    for function in [*TRAIN_FUNCTIONS, *HELDOUT_FUNCTIONS]:
        said |= content_words(" ".join([function.name.replace("_", " "), function.phrase, function.description, *(text for text, _ in function.train + function.heldout)]))
    said |= content_words(" ".join(str(value) for vocab in VOCAB.values() for values in vocab.values() for value in values))
    for request, phrase in UNOFFERED:
        assert content_words(request) & content_words(phrase), request  # the refusal names the request
        assert not content_words(f"{request} {phrase}") & said, (request, content_words(f"{request} {phrase}") & said)


def test_agent_failures_are_attributed_by_kind():
    agent = FAMILIES["agent"]
    cases = agent.generate("train", 60, seed=1)
    call = next(c for c in cases if c.check["kind"] == "call" and len(c.check["calls"]) == 1 and len(c.tools) > 1)
    no_call = next(c for c in cases if c.check["kind"] == "no_call")
    right = call.answer["tool_calls"][0]["function"]
    other = next(t["function"]["name"] for t in call.tools if t["function"]["name"] != right["name"])

    def calling(name: str, arguments: dict) -> dict:
        return {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}

    assert agent.failure(call, {"role": "assistant", "content": "Sure!"}) == "no call"
    assert agent.failure(call, calling(other, {})) == "wrong tool"
    assert agent.failure(call, calling(right["name"], {"nonsense": 1})) == "wrong arguments"
    assert agent.failure(no_call, calling(other, {})) == "spurious call"
    assert all(kind in EDITS for kind in ("no call", "wrong tool", "wrong arguments", "spurious call", "failing test", "invalid surface"))


def test_the_edits_tried_are_instructions_for_the_commonest_failures_then_a_tool_description_or_a_worked_example():
    cases = FAMILIES["agent"].generate("train", 20, seed=2)
    calls = [c for c in cases if c.check["kind"] == "call" and len(c.messages) == 1]
    wrong_arguments = [(calls[0], "wrong arguments"), (calls[1], "wrong arguments"), (cases[0], "no call")]
    tried = proposals(wrong_arguments, max_trials=3)
    assert tried[:2] == [Edit("wrong arguments", "instruction", EDITS["wrong arguments"]), Edit("no call", "instruction", EDITS["no call"])]
    needed = calls[0].check["calls"][0]
    schema = next(t["function"] for t in calls[0].tools if t["function"]["name"] == needed["name"])
    described = tried[2]
    assert (described.kind, described.function, described.source) == ("tool_description", needed["name"], calls[0].request)
    for param in schema["parameters"]["properties"]:  # every parameter: required or not, with the reference's value
        kind = "required" if param in schema["parameters"].get("required", []) else "optional"
        shown = f", e.g. {json.dumps(needed['arguments'][param])}" if param in needed["arguments"] else ""
        assert f"{param} ({schema['parameters']['properties'][param].get('type', 'any')}, {kind}{shown})" in described.text
    assert [e.kind for e in proposals(wrong_arguments, max_trials=1)] == ["tool_description"] and proposals([], 3) == []

    no_call = [(calls[2], "no call")]
    (instruction, example) = proposals(no_call, max_trials=2)
    call = calls[2].answer["tool_calls"][0]["function"]
    assert example.kind == "example" and example.source == calls[2].request and call["name"] in example.text and call["arguments"] in example.text

    # nothing to make an example of (a three-message case): the slot goes to one more instruction
    results = [c for c in cases if c.check["kind"] == "result"]
    facts_missing = [(results[0], "facts missing"), (calls[3], "wrong answer")]
    assert [(e.kind, e.failure) for e in proposals(facts_missing, max_trials=2)] == [("instruction", "facts missing"), ("instruction", "wrong answer")]


def test_a_kept_edit_round_trips_through_the_generation_state_old_and_new():
    hcp = load_hcp()
    edit = Edit("wrong tool", "tool_description", "Current weather of one city.", "get_weather", source="Weather in Oslo?")
    state = json.loads(json.dumps({"expansion": {"kept": asdict(edit)}}))
    assert with_kept_edit(hcp, "agent", state).tools.descriptions == {"get_weather": "Current weather of one city."}
    old = {"expansion": {"instruction": EDITS["no call"]}}  # written before edits had kinds
    assert with_kept_edit(hcp, "agent", old).system_prompt("agent").endswith(EDITS["no call"])
    assert with_kept_edit(hcp, "agent", {"expansion": {"kept": None, "trials": []}}) == hcp


def test_an_edit_changes_the_targets_prompt_or_the_tool_descriptions_and_nothing_else():
    hcp = load_hcp()
    changed = Edit("wrong arguments", "instruction", EDITS["wrong arguments"]).applied(hcp, "agent")
    assert changed.system_prompt("agent").endswith(EDITS["wrong arguments"]) and changed.tools == hcp.tools
    first = Edit("no call", "example", f"{EXAMPLE} Weather in Oslo? Answer: call get_weather").applied(changed, "agent")
    second = Edit("no call", "example", f"{EXAMPLE} Timer for 5? Answer: call set_timer").applied(first, "agent")
    assert second.specialist("agent").prompt.splitlines() == [EDITS["wrong arguments"], f"{EXAMPLE} Timer for 5? Answer: call set_timer"]  # one example at a time
    assert [changed.system_prompt(s.label) for s in hcp.specialists if s.label != "agent"] == [hcp.system_prompt(s.label) for s in hcp.specialists if s.label != "agent"]

    weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {"type": "object", "properties": {}}}}
    timer = {"type": "function", "function": {"name": "set_timer", "description": "Timer.", "parameters": {"type": "object", "properties": {}}}}
    described = Edit("wrong tool", "tool_description", "Current weather of one city.", "get_weather").applied(hcp, "agent")
    assert [s.prompt for s in described.specialists] == [s.prompt for s in hcp.specialists]
    offered = described.tools.described([weather, timer])
    assert offered == [{**weather, "function": {**weather["function"], "description": "Current weather of one city."}}, timer]
    assert hcp.tools.described([weather, timer]) == [weather, timer] and weather["function"]["description"] == "Weather."  # the client's tools are not changed in place


def test_passing_answers_are_kept_distinct_and_at_most_n_per_problem():
    prompt = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]
    rows = [{"messages": [*prompt, {"role": "assistant", "content": a}]} for a in ["x", "x", "y", "z"]]
    rows.append({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "other"}, {"role": "assistant", "content": "x"}]})
    kept = _distinct_per_problem(rows, 2)
    assert [r["messages"][-1]["content"] for r in kept] == ["x", "y", "x"]


def test_the_harness_tool_descriptions_reach_evolves_requests_and_rl_problems():
    case = next(c for c in FAMILIES["agent"].generate("train", 20, seed=2) if c.tools)
    name = case.tools[0]["function"]["name"]
    hcp = Edit("wrong tool", "tool_description", "Described by the harness.", name).applied(load_hcp(), "agent")
    who = specialist("http://engine/v1", hcp, "agent")
    assert who.body(case, 0.0)["tools"][0]["function"]["description"] == "Described by the harness."
    assert case.tools[0]["function"]["description"] != "Described by the harness."  # the case itself is untouched
    dataset = FamilyDataset("agent", "train", 20, hcp, "agent", renderer=None, seed=2)
    offered = [t["function"] for c in dataset.cases for t in c.tools or [] if t["function"]["name"] == name]
    assert offered and all(f["description"] == "Described by the harness." for f in offered)


def test_expansion_keeps_the_edit_that_fixes_failures_and_spends_the_search_split_only_on_such_edits(monkeypatch):
    """A scripted specialist calls the right function only when its prompt asks it to (the
    ``no call`` instruction): that edit is kept; one that fixes nothing is never searched."""
    import molt.evolve.expansion as expansion

    cases = [c for c in FAMILIES["agent"].generate("train", 40, seed=3) if c.check["kind"] == "call"]
    bank, search = cases[:8], cases[8:14]
    answered: list[tuple[bool, int]] = []

    def scripted(who, asked, on_case=lambda: None):
        told = EDITS["no call"] in who.system
        answered.append((told, len(asked)))
        for _ in asked:
            on_case()
        return [c.answer if told else {"role": "assistant", "content": "Sure, I can help with that."} for c in asked]

    monkeypatch.setattr(expansion, "greedy", scripted)
    hcp = load_hcp()
    ticks = []
    result = expansion.expand(specialist("http://unused", hcp, "agent"), hcp, "agent", bank, search, max_trials=2, on_case=lambda: ticks.append(1))
    assert result.failures == {"no call": 8} and result.bank_score == 0.0 and result.search_before == 0.0
    (fixing, other) = result.trials
    assert fixing.edit == Edit("no call", "instruction", EDITS["no call"]) and fixing.fixed == 8 and fixing.search == 1.0 and fixing.kept
    assert other.edit.kind == "example" and other.fixed == 0 and other.search is None and not other.kept
    assert result.kept == fixing.edit
    assert [n for _, n in answered] == [8, 6, 8, 6, 7]  # bank, search, edit 1's slice and search, edit 2's slice (its own source left out), no search
    assert len(ticks) == 8 + 6 + 2 * (8 + 6) - 1  # the bar still reaches the total the generation announced (less the example's own source)


def test_rehearsal_brings_each_kind_of_problem_back_to_its_share_of_the_bank():
    bank = FAMILIES["agent"].generate("train", 40, seed=3)
    pool = FAMILIES["agent"].generate("train", 160, seed=4)
    share = Counter(kind_of(c) for c in bank)
    have = Counter({"call": 3 * share["call"], "no_call": share["no_call"]})  # calls over-represented, no result row at all
    chosen = Counter(kind_of(c) for c in rehearsal(have, bank, pool))
    assert "call" not in chosen and chosen["no_call"] == 2 * share["no_call"] and chosen["result"] == 3 * share["result"]
    assert rehearsal(Counter({k: 2 * n for k, n in share.items()}), bank, pool) == []  # balanced already: nothing added
