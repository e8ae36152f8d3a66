"""``molt bench substrate`` measures what it claims: reference episodes of both modes, replayed by a
scripted engine through the real proxy, harness, sandbox and world service, are all right, and
the REPL's take fewer model calls; a wrong final answer is not. The model is out of the loop here
(``molt bench substrate`` runs it). Run: pytest tests/bench/test_substrate_bench.py"""

from molt.bench.answers import replies
from molt.bench.substrate import outcome, summary, variant, world_proxies, world_service
from molt.families.base import Case
from molt.families.business import FAMILY, MODES, episode, tasks, world_of
from molt.http_server import ServerThread
from molt.proxy.server import create_app
from molt.registry.database import scratch_database
from scripted_engine import ScriptedEngine
from scripted_stack import hcp

WORLD = world_of("heldout")
TASKS = tasks("heldout", 4)
CASES = [Case(FAMILY.name, [{"role": "user", "content": t.question}], {"role": "assistant", "content": t.answer}) for t in TASKS]


def replayed(mode: str, finals: dict[int, str] | None = None) -> tuple[list[dict], ScriptedEngine]:
    """The bench's path with the model's turns scripted: each task's reference episode in ``mode``."""
    script = []
    for i, task in enumerate(TASKS):
        steps = [m for m in episode(task, mode, WORLD) if m["role"] == "assistant"]
        if finals and i in finals:
            steps[-1] = {"role": "assistant", "content": finals[i]}
        script += steps
    engine = ScriptedEngine(script)
    with ServerThread(world_service(WORLD)) as world_url, engine as engine_url:
        contract = variant(hcp(engine_url), "specialist", mode, world_proxies(WORLD, world_url))
        with scratch_database() as db, ServerThread(create_app(contract, summaries=False, db=db)) as url:
            answered = replies(f"{url}/v1", "agent", CASES, concurrency=1)
    return [outcome(t, r, WORLD) for t, r in zip(TASKS, answered)], engine


def test_reference_episodes_of_both_modes_are_right_and_the_repl_takes_fewer_calls():
    results = {mode: replayed(mode) for mode in MODES}
    table = summary({"specialist": {mode: found for mode, (found, _) in results.items()}})["specialist"]
    assert table["function_calling"]["accuracy"] == table["repl"]["accuracy"] == 1.0
    assert table["repl"]["model_calls"] == 2 and table["function_calling"]["model_calls"] > 2
    repl_engine = results["repl"][1]
    code_results = [r["messages"][-1]["content"] for r in repl_engine.requests if r["messages"][-1]["role"] == "tool"]
    assert code_results == [t.output for t in TASKS]  # each program ran in the sandbox against the world service
    offered = {t["function"]["name"] for r in results["function_calling"][1].requests for t in r.get("tools", [])}
    assert offered == {s["function"]["name"] for s in WORLD.schemas}


def test_a_wrong_or_hedged_final_answer_is_not_right():
    found, _ = replayed("repl", finals={0: "I could not work it out.", 1: f"Maybe {TASKS[1].output}, or maybe not: 1, 2, 3."})
    assert [o["right"] for o in found] == [False, False, True, True]
