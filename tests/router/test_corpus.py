"""The outside-style routing corpus: held out by domain and style. Both splits are generated at
the size training and scoring use, and the held-out split shares no domain, topic, style or
non-English language tag, no request text and no function name with train; no function is one
of the agent family's. Every label's every kind occurs in both splits, and a seed gives the same
turns. Run: pytest tests/router/test_corpus.py"""

import json

import pytest

from molt.families import FAMILIES, SPLITS
from molt.router.corpus import LABELS, SEPARATED, generate, tool_names
from molt.router.corpus.kinds import KINDS
from molt.router.training import OUTSIDE_PER_LABEL, REQUESTS_PER_LABEL


@pytest.fixture(scope="module")
def splits():
    return generate("train", OUTSIDE_PER_LABEL), generate("heldout", REQUESTS_PER_LABEL // 2)


def separated_tags(turns) -> set[str]:
    return {tag for turn in turns for tag in turn.tags if tag.startswith(SEPARATED)} - {"lang:en"}


def test_the_heldout_split_shares_no_domain_style_language_text_or_function(splits):
    train, heldout = splits
    assert separated_tags(train) and separated_tags(heldout)
    assert not separated_tags(train) & separated_tags(heldout)
    assert not {t.request.text for t in train} & {t.request.text for t in heldout}
    assert tool_names(train) and tool_names(heldout) and not tool_names(train) & tool_names(heldout)
    assert {"lang:es", "lang:fr"} <= separated_tags(train) and {"lang:de", "lang:pt"} <= separated_tags(heldout)


def test_no_function_is_one_the_agent_family_offers(splits):
    family = {t["function"]["name"] for split in SPLITS for case in FAMILIES["agent"].generate(split, REQUESTS_PER_LABEL, 0) for t in case.tools or []}
    assert family and not (tool_names(splits[0]) | tool_names(splits[1])) & family


def test_every_kind_of_every_label_occurs_in_both_splits(splits):
    for turns in splits:
        kinds = {tag for turn in turns for tag in turn.tags if tag.startswith("kind:")}
        assert kinds == {f"kind:{kind.__name__}" for label in LABELS for kind in KINDS[label]}
        assert {t.label for t in turns} == set(LABELS)


def test_turns_have_the_shapes_they_claim(splits):
    """Tool results end agent result turns, a surface precedes a UI edit, and offered tools are
    well-formed OpenAI function schemas."""
    for turn in splits[0] + splits[1]:
        request = turn.request
        if "kind:agent_result" in turn.tags:
            assert [m["role"] for m in request.replies] == ["assistant", "tool"]
        if "kind:genui_edit" in turn.tags:
            assert '"createSurface"' in request.history[-1]["content"]
        for tool in request.tools:
            assert tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
        assert request.text.strip() and json.dumps(request.messages)


def test_a_seed_gives_the_same_turns():
    assert generate("heldout", 20, seed=3) == generate("heldout", 20, seed=3) != generate("heldout", 20, seed=4)
    assert [t.label for t in generate("train", 2, labels=["genui", "weather"])] == ["genui", "genui"]
    with pytest.raises(ValueError, match="splits 'train' and 'heldout'"):
        generate("wording", 1)
