"""The session's bootstrap, in a process of its own: ``tests/conftest.py`` starts it as the session
starts, on one thread (the suite leaves most of the second core idle), and the tests that use
``bootstrapped`` run last and read its result. It is what ``molt up`` does on first start, on the
embedded model, sized for CI: the router as shipped (trained on a third of its data, it sent "Name
the capital city of Italy." with a weather function on offer to the agent); chat, and an agent
trained on five of the sixteen function schemas (the plain-conversation and tool-calling paths the
end-to-end tests drive, on the wording split's functions); coding and genui answer with the base.
``molt bench specialists`` measures the full recipes. Writes ``{"pair", "alias", "path"}`` to the
file its argument names."""

import json
import sys
from pathlib import Path

import torch

from molt.families import Recipe
from molt.hcp import load_hcp
from molt.specialists.bootstrap import bootstrap

FUNCTIONS = ["get_weather", "set_timer", "add_todo", "call_contact", "get_stock_price"]
# at this size the default mix holds ~8 tool-result cases, too few to learn to stop after one
SHAPES = {"call": 0.4, "parallel": 0.05, "no_call": 0.25, "result": 0.3}
RECIPES = {
    "chat": Recipe(examples=40, epochs=2, batch_tokens=1024),
    "agent": Recipe(examples=100, learning_rate=3e-3, options={"functions": FUNCTIONS, "shapes": SHAPES}, extras=0),
}

if __name__ == "__main__":
    torch.set_num_threads(1)
    done = bootstrap(load_hcp(), labels=["chat", "agent"], recipes=RECIPES)
    Path(sys.argv[1]).write_text(json.dumps({"pair": done.pair.id, "alias": done.alias, "path": str(done.path)}))
