"""What the bootstrap trains each specialist on: the family's train split in chat JSONL that
`molt train sft` reads, every other finished turn followed by the HCP's summary request."""

from molt.hcp import load_hcp
from molt.specialists.bootstrap import write_data
from molt.families import FAMILIES, Recipe
from molt.train.data import read_chat_jsonl


def test_each_family_writes_trainable_rows_with_summary_turns():
    hcp = load_hcp()
    for label in ("chat", "agent", "coding", "genui"):
        rows = read_chat_jsonl(write_data(hcp, label, Recipe(examples=20, options=FAMILIES[label].recipe.options, extras=0), seed=0))
        assert len(rows) == 20 and all(r.messages[0] == {"role": "system", "content": hcp.system_prompt(label)} for r in rows)
        summarised = [r for r in rows if r.messages[-2:][0]["content"] == hcp.prompts.summary]
        assert summarised and all(r.messages[-1]["content"].startswith("I ") and len(r.messages[-1]["content"]) < 400 for r in summarised)
        assert not any(m.get("tool_calls") for r in summarised for m in r.messages[-3:-2])  # never after a call awaiting results
    assert all(r.tools for r in read_chat_jsonl(write_data(hcp, "agent", Recipe(examples=10), seed=0)))


def test_the_agent_also_learns_the_business_episodes_in_both_modes():
    rows = read_chat_jsonl(write_data(load_hcp(), "agent", Recipe(examples=20, extras=0.1), seed=0))
    offered = [{t["function"]["name"] for t in r.tools or []} for r in rows]
    assert len(rows) == 20 + 24
    assert sum(names == {"python"} for names in offered) and sum("list_orders" in names for names in offered)
