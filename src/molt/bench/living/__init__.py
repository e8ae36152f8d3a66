"""LivingBench-style personal-assistant benchmark: a tool world, a scripted user, noise and memory.

- ``phrases.py``: how dates, times and amounts are said, and the forms a message may use;
- ``world.py``: the tools (calendar, contacts, shop, bank, messages) as OpenAI schemas, and
  ``World.call``, which records every call;
- ``task.py``: what a task template returns, and the pieces templates are written with;
- ``train_tasks.py`` / ``heldout_tasks.py``: the ``train`` and ``test`` splits' templates and
  entity pools, disjoint by construction;
- ``scenarios.py``: each template in six variants (four noise kinds, two memory kinds);
- ``simulator.py``: the scripted user that answers only what it is asked;
- ``scoring.py``: ``total = 0.7 * need + 0.3 * process``, with each process component;
- ``runner.py``: ``run_scenario(scenario, assistant)``;
- ``assistants.py``: the oracle and the idle reference assistants.
"""

from molt.bench.living.assistants import OracleAssistant, idle_assistant
from molt.bench.living.runner import Result, run_scenario
from molt.bench.living.scenarios import Scenario, scenarios
from molt.bench.living.scoring import Score, score
from molt.bench.living.simulator import UserSimulator
from molt.bench.living.world import TOOLS, World

__all__ = ["TOOLS", "OracleAssistant", "Result", "Scenario", "Score", "UserSimulator", "World", "idle_assistant", "run_scenario", "scenarios", "score"]
