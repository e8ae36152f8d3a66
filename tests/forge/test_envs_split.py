"""The RL environments train on a split that shares nothing with their held-out problems.
Run: pytest tests/forge/test_envs_split.py"""

from molt.families import FAMILIES
from molt.forge.catalog import ENVS


def test_every_env_trains_on_a_split_disjoint_from_heldout():
    for name, spec in ENVS.items():
        if getattr(spec.dataset, "args", ())[0:1] and spec.dataset.args[0] in FAMILIES:
            family = FAMILIES[spec.dataset.args[0]]
            trained = family.generate(spec.train_split, 200, seed=0)
            heldout = family.generate("heldout", 100, seed=0)
            shared = {e for c in trained for e in family.entities(c)} & {e for c in heldout for e in family.entities(c)}
            assert not shared, f"{name}: {sorted(shared)[:5]}"
            assert not {c.request for c in trained} & {c.request for c in heldout}, name
    assert ENVS["tool_calls"].train_split == "wording"
