"""The held-out split shares nothing with train: ``.venv/bin/pytest tests/families/test_heldout_overlap.py``.

Both splits are generated at full size (the recipe's train examples, or the router's 300 per
label if more; 300 held-out cases), and the test fails on any held-out reference answer,
function name, entity or word 8-gram that occurs in train. Splits that differ only in wording
(the ``wording`` split) fail it: the same answers, names and facts recur.
"""

import re

import pytest

from molt.families import ALL_FAMILIES as FAMILIES

N = 8
TRAIN_SIZE = 300
HELDOUT_SIZE = 300


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def ngrams(text: str, n: int = N) -> set[tuple[str, ...]]:
    tokens = words(text)
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def splits(name: str):
    family = FAMILIES[name]
    train = family.generate("train", max(family.recipe.examples, TRAIN_SIZE), 0, **family.recipe.options)
    return family, train, family.generate("heldout", HELDOUT_SIZE, 0)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_no_heldout_answer_entity_or_long_ngram_is_in_train(name):
    family, train, heldout = splits(name)
    train_texts = [t for case in train for t in family.contents(case)]
    train_answers = {case.answer.get("content") for case in train} | {str(case.answer.get("tool_calls")) for case in train if case.answer.get("tool_calls")}
    train_entities = {e.lower() for case in train for e in family.entities(case)}
    train_ngrams = set().union(*(ngrams(t) for t in train_texts))
    train_words = " " + " ".join(" ".join(words(t)) for t in train_texts) + " "
    for case in heldout:
        answer = case.answer.get("content") or str(case.answer.get("tool_calls"))
        assert answer not in train_answers, f"held-out answer also in train: {answer[:120]}"
        for entity in family.entities(case):
            assert entity.lower() not in train_entities, f"held-out entity {entity!r} is a train entity"
            assert f" {' '.join(words(entity))} " not in train_words, f"held-out entity {entity!r} occurs in train text"
        for text in family.contents(case):
            shared = ngrams(text) & train_ngrams
            assert not shared, f"held-out 8-gram in train: {' '.join(sorted(shared)[0])!r} (from {text[:120]!r})"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_heldout_withholds_things_and_wording_keeps_them(name):
    """``heldout`` has entities of its own; ``wording`` reuses train's, with other requests."""
    family, train, heldout = splits(name)
    wording = family.generate("wording", HELDOUT_SIZE, 0)
    train_entities = {e for case in train for e in family.entities(case)}
    assert {e for case in heldout for e in family.entities(case)}.isdisjoint(train_entities)
    wording_entities = {e for case in wording for e in family.entities(case)}
    assert len(wording_entities & train_entities) >= 0.8 * len(wording_entities)  # random draws: not every value is drawn at this size
    assert not {c.request for c in wording} & {c.request for c in train}


def test_the_check_catches_a_leak():
    """The overlap check itself can fail: a held-out text with a train sentence in it is caught."""
    family, train, _ = splits("coding")
    leaked = family.contents(train[0])[-1]
    assert ngrams("some new words " + leaked) & set().union(*(ngrams(t) for c in train for t in family.contents(c)))


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_wording_only_split_would_fail_the_overlap_check(name):
    """The overlap check is not vacuous: the wording split, which keeps train's things, shares
    answers or entities with train."""
    family, train, _ = splits(name)
    train_entities = {e.lower() for case in train for e in family.entities(case)}
    train_answers = {case.answer.get("content") or str(case.answer.get("tool_calls")) for case in train}
    wording = family.generate("wording", HELDOUT_SIZE, 0)
    shared_entities = {e for case in wording for e in family.entities(case) if e.lower() in train_entities}
    shared_answers = {case.answer.get("content") or str(case.answer.get("tool_calls")) for case in wording} & train_answers
    assert shared_entities or shared_answers
