"""Group-relative advantages (GRPO): each trajectory's reward against its group's mean.

A group is several samples of the same problem. A group whose rewards are all equal has zero
advantage everywhere, so it is dropped before training rather than spent on a no-op step.
"""

import statistics

from molt.forge.trajectory import Trajectory


def group_advantages(rewards: list[float], normalize: bool = False, eps: float = 1e-6) -> list[float]:
    """reward − group mean, divided by the group's standard deviation when ``normalize``."""
    if not rewards:
        return []
    mean = statistics.fmean(rewards)
    scale = statistics.pstdev(rewards) + eps if normalize else 1.0
    return [(r - mean) / scale for r in rewards]


def is_constant(group: list[Trajectory]) -> bool:
    rewards = [t.reward for t in group]
    return max(rewards) - min(rewards) < 1e-9


def informative_groups(groups: list[list[Trajectory]]) -> list[list[Trajectory]]:
    """The groups whose rewards differ; the others teach nothing."""
    return [group for group in groups if not is_constant(group)]
