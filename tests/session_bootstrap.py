"""The session's bootstrap, in a process of its own: ``tests/conftest.py`` starts it as the session
starts, on one thread (the suite leaves most of the second core idle), and the tests that use
``bootstrapped`` run last and read its result. It is what ``molt up`` does on first start, on the
embedded model, sized for CI: the router as shipped (trained on a third of its data, it sent "Name
the capital city of Italy." with a weather function on offer to the agent); chat, and an agent
trained on five of the sixteen function schemas (the plain-conversation and tool-calling paths the
end-to-end tests drive, on the wording split's functions); coding and genui answer with the base.
``molt bench specialists`` measures the full recipes. Writes ``{"pair", "alias", "path"}`` to
``bootstrap.json`` in the folder its argument names.

With ``--corrupted`` it goes on to train, from the bootstrapped pair, the harmed candidates the
gate's tests judge (its agent, then its chat, trained on corrupted labels) and writes their pairs
to ``corrupted.json``: training on the idle core, so the suite's own thread only answers."""

import json
import random
import sys
from pathlib import Path

import torch

from molt.families import FAMILIES, Recipe
from molt.hcp import load_hcp
from molt.home import write_atomic
from molt.lora.format import read_adapter
from molt.mint import ServiceClient
from molt.mint.checkpoints import resolve
from molt.registry import Registry
from molt.registry.pairs import pair_hcp, register_sft, with_adapter
from molt.specialists.bootstrap import bootstrap
from molt.train.sft import SFTConfig, run_sft

FUNCTIONS = ["get_weather", "set_timer", "add_todo", "call_contact", "get_stock_price"]
# at this size the default mix holds ~8 tool-result cases, too few to learn to stop after one
SHAPES = {"call": 0.4, "parallel": 0.05, "no_call": 0.25, "result": 0.3}
RECIPES = {
    "chat": Recipe(examples=40, epochs=2, batch_tokens=1024),
    "agent": Recipe(examples=100, learning_rate=3e-3, options={"functions": FUNCTIONS, "shapes": SHAPES}, extras=0),
}


def corrupted_rows(label: str, system: str) -> list[dict]:
    """Train rows whose answers are wrong on purpose: calls to the wrong function, chat answers that
    are a code dump instead of a sentence."""
    rng = random.Random(0)
    rows = []
    options = {"functions": FUNCTIONS} if label == "agent" else {}
    for case in FAMILIES[label].generate("train", 24, seed=11, **options):
        row = case.training_row(system)
        answer = row["messages"][-1]
        if answer.get("tool_calls"):
            others = [t["function"]["name"] for t in case.tools or [] if t["function"]["name"] != answer["tool_calls"][0]["function"]["name"]]
            answer["tool_calls"] = [{**c, "function": {"name": rng.choice(others or ["nothing"]), "arguments": "{}"}} for c in answer["tool_calls"]]
        else:
            row["messages"][-1] = {"role": "assistant", "content": "```\n{\"error\": true}\n```"}
        rows.append(row)
    return rows


def corrupt(registry: Registry, pair: str, label: str, folder: Path) -> str:
    """``pair`` with ``label``'s adapter trained on from its revision on corrupted labels."""
    hcp = pair_hcp(registry, pair)
    start = "molt://" + hcp.specialist(label).revision
    data = folder / f"{label}-corrupted.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in corrupted_rows(label, hcp.system_prompt(label))))
    config = SFTConfig(
        adapter=f"{label}-corrupted", data=data, base_model=hcp.model.base, rank=read_adapter(resolve(start)).r, learning_rate=3e-3,
        max_steps=8, batch_tokens=1024, eval_fraction=0, train_unembed=False, init_from=start,
    )
    adapter = register_sft(registry, config, run_sft(config, ServiceClient(dtype="auto")), source="corrupted labels (test)")
    return with_adapter(registry, pair, adapter.id, label=label).id


if __name__ == "__main__":
    torch.set_num_threads(1)
    folder = Path(sys.argv[1])
    done = bootstrap(load_hcp(), labels=["chat", "agent"], recipes=RECIPES)
    write_atomic(folder / "bootstrap.json", json.dumps({"pair": done.pair.id, "alias": done.alias, "path": str(done.path)}))  # whole or not at all: the session polls for it
    if "--corrupted" in sys.argv:
        registry = Registry()
        write_atomic(folder / "corrupted.json", json.dumps({label: corrupt(registry, done.pair.id, label, folder) for label in ("agent", "chat")}))
