"""The living-bench scenarios: sizes, noise coverage, memory sessions, determinism and a held-out
split that is held out by construction. Run: pytest tests/bench/test_living_scenarios.py

The disjointness test generates both splits in full and collects every entity of every world
(contacts, items, events, senders) and every answer (slot values and phrases, every session's goal
values, derived and stale values), and compares the side chores' wordings: one shared string
fails it, so it cannot pass by sampling luck."""

from collections import Counter

import pytest

from molt.bench.living import heldout_tasks, train_tasks
from molt.bench.living.phrases import mentions
from molt.bench.living.scenarios import NOISE_KINDS, scenarios
from molt.bench.living.task import Lookup
from molt.harness.memory import stated_facts


def flat(value, skip=("id", "event_id")):
    """Every leaf of a nested value as lower-case text; ids are the world's, not entities."""
    if isinstance(value, dict):
        return [x for k, v in value.items() if k not in skip for x in flat(v)]
    if isinstance(value, Lookup):
        return flat(list(value.table.values())) + flat(list(value.table))
    if isinstance(value, (list, tuple, set, frozenset)):
        return [x for v in value for x in flat(v)]
    return [] if value is None else [str(value).lower()]


def entities(scenario) -> set[str]:
    world = scenario.world
    names = [c["name"] for c in world["contacts"]] + [i["name"] for i in world["catalog"]] + [e["title"] for e in world["events"]] + [m["from"] for m in world["inbox"]]
    slots = [(s.value, s.spoken, s.alt) for s in scenario.profile.values()]
    stale = scenario.change.stale if scenario.change else {}
    goals = [e.fields for session in scenario.sessions for e in session.goal]
    return set(flat(names) + flat(slots) + flat(goals) + flat(scenario.derived) + flat(stale))


def test_each_split_has_enough_scenarios_and_memory_sessions():
    test, train = scenarios("test"), scenarios("train")
    assert len(test) >= 40 and len(train) >= 40
    assert sum(s.multi_session for s in test) >= 10
    assert len({s.id for s in test}) == len(test) and len({s.domain for s in test}) == len({s.domain for s in train}) == 7
    with pytest.raises(ValueError, match="unknown split"):
        scenarios("dev")


def test_every_noise_kind_is_exercised_in_the_test_split():
    counts = Counter(kind for s in scenarios("test") for kind in s.noise)
    assert all(counts[kind] >= 5 for kind in NOISE_KINDS), counts
    for s in scenarios("test"):
        if "user_noise" in s.noise:
            assert s.cue and s.cue.turn == 2 and mentions(s.cue.text, s.profile[s.cue.slot].spoken)
            assert not mentions(s.sessions[-1].opening, s.profile[s.cue.slot].spoken)  # the opening has the old value
        if "world_change" in s.noise:
            assert s.change and s.change.ops and s.change.stale
        if "corrupted_tool" in s.noise:
            assert s.fault and s.fault.nth == 1
    assert {s.fault.kind for s in scenarios("test") if s.fault} == {"unavailable", "truncated"}


def test_withheld_slots_are_not_in_the_opening():
    for s in scenarios("test") + scenarios("train"):
        main = s.sessions[-1]
        assert all(not mentions(main.opening, s.profile[n].spoken) for n in main.withheld + main.recalled), s.id
        assert all(mentions(main.opening, s.profile[n].spoken) for n in main.given if not (s.cue and s.cue.slot == n)), s.id
    assert all(len(s.sessions[-1].withheld) == len(s.profile) for s in scenarios("test") if "asymmetry" in s.noise)


def test_memory_scenarios_state_the_fact_only_in_an_earlier_session():
    for s in (s for s in scenarios("test") if s.multi_session):
        (slot_name,) = s.sessions[-1].recalled
        slot = s.profile[slot_name]
        earlier = [x.opening for x in s.sessions[:-1]]
        assert mentions(earlier[-1], slot.spoken) and not mentions(s.sessions[-1].opening, slot.spoken)
        if s.variant == "memory_stale":  # the first statement is the old value, the newest wins
            assert len(s.sessions) == 3 and mentions(earlier[0], slot.alt[1]) and not mentions(earlier[0], slot.spoken)
        assert s.goal == s.sessions[-1].goal and all(x.goal for x in s.sessions[:-1])  # the need is the last session's


def test_memory_keeps_each_remembered_fact_as_said():
    """What memory's ``my X is Y`` rule keeps from the earlier sessions, a later statement of a key
    replacing an earlier one, holds the value the last session needs (and no longer the stale one)."""
    for s in (s for s in scenarios("train") + scenarios("test") if s.multi_session):
        slot = s.profile[s.sessions[-1].recalled[0]]
        kept = {key: value for x in s.sessions[:-1] for key, value in stated_facts(x.opening)}
        assert any(mentions(v, slot.spoken) or mentions(v, str(slot.value)) for v in kept.values()), (s.id, kept)
        if s.variant == "memory_stale":
            assert not any(mentions(v, slot.alt[1]) for v in kept.values()), (s.id, kept)


def test_train_and_test_share_no_template_entity_or_answer():
    test, train = scenarios("test"), scenarios("train")
    assert not {s.template for s in test} & {s.template for s in train}
    shared = set().union(*map(entities, test)) & set().union(*map(entities, train))
    assert not shared, sorted(shared)
    lead = [{text.split("{")[0].lower() for text in module.SIDE_TEXTS} for module in (train_tasks, heldout_tasks)]
    assert all(lead) and not lead[0] & lead[1]
    for split, module in (("train", train_tasks), ("test", heldout_tasks)):
        sides = [x.opening for s in scenarios(split) for x in s.sessions[:-1]]
        assert sides and all(any(o.startswith(t.split("{")[0]) for t in module.SIDE_TEXTS) for o in sides)


def test_same_seed_same_scenarios_and_seed_varies_wording_only():
    assert scenarios("test", seed=3) == scenarios("test", seed=3)
    a, b = scenarios("test", seed=0), scenarios("test", seed=1)
    assert [(s.id, s.world, s.profile, s.goal, s.forbidden, s.derived) for s in a] == [(s.id, s.world, s.profile, s.goal, s.forbidden, s.derived) for s in b]
    differ = sum(x.opening != y.opening for s, t in zip(a, b) for x, y in zip(s.sessions, t.sessions))
    assert 0 < differ
