"""``molt bench specialists`` asks every system the same thing: ``.venv/bin/pytest tests/bench/test_specialists.py``.

Base and specialist are called on the engine with the specialist's system prompt; the routed
system through the proxy, which adds that same prompt itself. Everything else — messages, tools,
temperature, max_tokens — must be equal, or the columns are not comparable (the routed column
once ran at the HCP's 512 tokens and temperature while the others ran at 64–320 and 0).
"""

import pytest

from molt.bench.answers import request_body
from molt.families import FAMILIES
from molt.hcp import load_hcp


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_system_gets_the_same_sampling_and_conversation(name):
    hcp = load_hcp()
    for case in FAMILIES[name].generate("heldout", 5, 0):
        system = hcp.system_prompt(name)
        base, specialist = request_body(hcp.model.base, case, system), request_body(name, case, system)
        routed = request_body("molt", case, None)
        assert routed["messages"] == base["messages"][1:] and base["messages"][0] == {"role": "system", "content": system}
        strip = lambda body: {k: v for k, v in body.items() if k not in ("model", "messages")}  # noqa: E731
        assert strip(base) == strip(specialist) == strip(routed)
        assert routed["temperature"] == 0 and routed["max_tokens"] == FAMILIES[name].max_tokens
        assert routed["max_tokens"] <= hcp.generation.max_tokens  # the proxy honours it unclamped


def test_a_family_without_a_trained_specialist_is_refused_before_any_work():
    from rich.console import Console

    from molt.bench.specialists import SpecialistsBenchConfig, run

    hcp = load_hcp()
    trained = hcp.model_copy(update={"specialists": [s.model_copy(update={"adapter": "chat"}) if s.label == "chat" else s for s in hcp.specialists]})
    with pytest.raises(ValueError, match="no trained specialist for agent in this HCP; it has chat"):
        run(trained, SpecialistsBenchConfig(families=("agent",)), Console())
