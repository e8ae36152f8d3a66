"""An episode as the policy lived it, and the Datums MinT trains on.

A trajectory is a list of transitions: at each turn the policy saw ``observation`` (the whole
context, as tokens) and sampled ``action`` with the sampler's logprob per token. Turns whose
observation extends the previous context (previous observation + action, then whatever the
environment appended: a tool result, the user's next message) are one sequence, so they become
one Datum; a turn whose context was rewritten (a summary, a trimmed view) starts a new one.

In a Datum, position i of ``model_input`` predicts token i+1; the prompt and environment tokens
carry advantage 0 and sampler logprob 0, the action tokens their trajectory's advantage and the
sampler's logprobs — the inputs of MinT's RL losses. On a sparse-MoE or sparse-attention base
each turn also carries the sampler's routing of its whole context (``molt.mint.routing``): in a run
of turns each position keeps the routing it had when it was first fed (a later turn's prefill
recomputes earlier positions only because routed requests skip the prefix cache), and the last
turn supplies the positions after that.
"""

from dataclasses import dataclass, field

from molt.mint.types import Datum, ModelInput


@dataclass(frozen=True)
class Transition:
    observation: list[int]
    """Every token the policy was conditioned on at this turn."""
    action: list[int]
    """The tokens it sampled."""
    logprobs: list[float]
    """The sampler's logprob of each action token."""
    reward: float = 0.0
    routing: dict[str, list] | None = None
    """The sampler's routing of observation + action − 1 positions, by Datum input name."""

    def __post_init__(self):
        if len(self.action) != len(self.logprobs):
            raise ValueError(f"an action of {len(self.action)} tokens has {len(self.logprobs)} logprobs")
        if not self.action:
            raise ValueError("a transition needs at least one action token")


@dataclass(frozen=True)
class Trajectory:
    transitions: list[Transition]
    final_reward: float = 0.0
    """Reward given at the end of the episode (e.g. the environment's end state)."""
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def reward(self) -> float:
        return self.final_reward + sum(t.reward for t in self.transitions)


@dataclass
class _Sequence:
    tokens: list[int]
    logprobs: list[float]
    advantages: list[float]
    routing: dict[str, list] | None = None

    def datum(self) -> Datum:
        inputs = {"target_tokens": self.tokens[1:], "logprobs": self.logprobs[1:], "advantages": self.advantages[1:]}
        for key, rows in (self.routing or {}).items():
            if len(rows) != len(self.tokens) - 1:
                raise ValueError(f"the routing covers {len(rows)} positions; the Datum has {len(self.tokens) - 1}")
            inputs[key] = rows
        return Datum(model_input=ModelInput.from_ints(self.tokens[:-1]), loss_fn_inputs=inputs)


def trajectory_datums(trajectory: Trajectory, advantage: float) -> list[Datum]:
    """One Datum per run of turns that extend each other's context (see the module doc)."""
    sequences: list[_Sequence] = []
    for turn in trajectory.transitions:
        current = sequences[-1] if sequences else None
        if current is not None and turn.observation[: len(current.tokens)] == current.tokens:
            appended = turn.observation[len(current.tokens) :]
        else:
            current, appended = _Sequence([], [], []), turn.observation
            sequences.append(current)
        current.tokens += appended + turn.action
        current.logprobs += [0.0] * len(appended) + turn.logprobs
        current.advantages += [0.0] * len(appended) + [advantage] * len(turn.action)
        current.routing = _extend_routing(current.routing, turn.routing)
    return [s.datum() for s in sequences]


def _extend_routing(earlier: dict[str, list] | None, turn: dict[str, list] | None) -> dict[str, list] | None:
    """Rows of the positions fed before this turn stay as first recorded; the turn adds the rest."""
    if earlier is None or turn is None:
        return turn
    return {key: earlier[key] + rows[len(earlier[key]) :] for key, rows in turn.items()}
