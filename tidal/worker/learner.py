"""Learner: runs the policy's learn mode and calls hooks (logging, checkpoints) on schedule."""
from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any, Callable

Hook = Callable[['Learner', dict[str, Any]], None]


@dataclass
class _ScheduledHook:
    fn: Hook
    every: int


class Learner:
    """Counts train iterations and runs hooks every N of them.

    The policy returns its losses as 0-d tensors; they are turned into Python floats only on the
    iterations a hook runs, so the other updates never wait on the device.
    """

    def __init__(self, policy: SimpleNamespace) -> None:
        self.policy = policy
        self.train_iter = 0
        self._hooks: list[_ScheduledHook] = []

    def register_hook(self, fn: Hook, every: int) -> None:
        if every < 1:
            raise ValueError(f'a hook period must be >= 1 train iteration, got {every}')
        self._hooks.append(_ScheduledHook(fn, every))

    def train(self, batch: dict[str, Any]) -> dict[str, Any]:
        info = self.policy.forward(batch)
        self.train_iter += 1
        for hook in self._hooks:
            if self.train_iter % hook.every == 0:
                hook.fn(self, info)
        return info


def scalars(info: dict[str, Any], names: list[str]) -> dict[str, float]:
    """The named entries of a learn output (0-d tensors or numbers) as Python floats."""
    return {name: float(info[name]) for name in names if name in info}
