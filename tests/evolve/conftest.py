"""A toy world for the loop's mechanics: the tiny model bootstrapped (chat and agent, a handful
of examples each) in a registry and a molt home of this module's own, so generations, promotions
and rollbacks never touch the session's registry."""

import pytest

from molt.families import Recipe
from molt.hcp import load_hcp
from molt.registry import Registry
from molt.specialists.bootstrap import bootstrap
from toy_sizes import TINY_ROUTER


@pytest.fixture(scope="module")
def tiny_world(tmp_path_factory):
    """(registry URL, the bootstrapped result); MOLT_HOME points at the module's own home while it lives."""
    home = tmp_path_factory.mktemp("evolve-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MOLT_HOME", str(home))
        url = f"sqlite:///{home / 'registry.db'}"
        patch.setenv("MOLT_DB", url)
        shipped = load_hcp()
        shipped = shipped.model_copy(update={"model": shipped.model.model_copy(update={"base": "tiny"})})
        recipes = {label: Recipe(examples=6, batch_tokens=1024, extras=0) for label in ("chat", "agent")}
        registry = Registry(url)
        done = bootstrap(shipped, labels=["chat", "agent"], recipes=recipes, router=TINY_ROUTER, registry=registry)
        registry.close()
        yield url, done
