"""Learner: runs the policy's learn mode and calls hooks (logging, checkpoints) on schedule."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch

from tidal.policies.modes import LearnMode
from tidal.worker.finite import FiniteGuard

Hook = Callable[['Learner', dict[str, Any]], None]


@dataclass
class _ScheduledHook:
    fn: Hook
    every: int


class Learner:
    """Counts train iterations and runs hooks every N of them.

    The policy returns its losses as 0-d tensors; they are turned into Python floats only on the
    iterations a hook runs, so the other updates never wait on the device. A `FiniteGuard` watches
    the monitored values meanwhile, on the device too.
    """

    def __init__(self, policy: LearnMode, device: Optional[torch.device] = None) -> None:
        self.policy = policy
        self.train_iter = 0
        self.guard = FiniteGuard(torch.device(device or 'cpu'))
        self._monitored = policy.monitor_vars()
        self._guard_start = 0  # train_iter when the guard started counting
        self._hooks: list[_ScheduledHook] = []

    def register_hook(self, fn: Hook, every: int) -> None:
        if every < 1:
            raise ValueError(f'a hook period must be >= 1 train iteration, got {every}')
        self._hooks.append(_ScheduledHook(fn, every))

    def train(self, batch: dict[str, Any]) -> dict[str, Any]:
        info = self.policy.forward(batch)
        self.guard.observe(info, self._monitored)
        self.train_iter += 1
        for hook in self._hooks:
            if self.train_iter % hook.every == 0:
                hook.fn(self, info)
        return info

    def restart_guard_at(self, train_iter: int) -> None:
        """Count the guard's iterations from `train_iter` (a resumed run)."""
        self.train_iter = self._guard_start = train_iter

    def first_failure(self) -> Optional[tuple[str, float, int]]:
        """(monitor key, value, train iteration) of the first non-finite value so far, or None."""
        return self.guard.first_failure(self._guard_start)


def scalars(info: dict[str, Any], names: list[str]) -> dict[str, float]:
    """The named entries of a learn output (0-d tensors or numbers) as Python floats."""
    return {name: float(info[name]) for name in names if name in info}
