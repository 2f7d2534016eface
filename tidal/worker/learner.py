"""Learner: runs the policy's learn mode and calls hooks (logging, checkpoints) on schedule."""
from __future__ import annotations

import numbers
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from tidal.base.errors import PolicyError
from tidal.base.modes import LearnMode
from tidal.worker.finite import FiniteGuard, NonFiniteError, first_non_finite_parameter

Hook = Callable[['Learner', dict[str, Any]], None]


@dataclass
class Period:
    """When a hook runs: every `iters` train iterations, or at the first one `env_steps` env steps (as
    `env_step()` counts them) after it last ran, whichever comes first. 0 env steps: by iterations only.
    The env steps count from the first update (a warm-up without updates does not make it due)."""

    iters: int
    env_steps: int = 0
    env_step: Callable[[], int] = lambda: 0
    last_env_step: Optional[int] = None  # env step of the latest run (or of the first update); in checkpoints

    def __post_init__(self) -> None:
        if self.iters < 1:
            raise ValueError(f'a hook period must be >= 1 train iteration, got {self.iters}')
        if self.env_steps < 0:
            raise ValueError(f'a hook period in env steps must be >= 0, got {self.env_steps}')

    def due(self, train_iter: int) -> bool:
        if not self.env_steps:
            return train_iter % self.iters == 0
        env_step = self.env_step()
        if self.last_env_step is None:
            self.last_env_step = env_step
        if train_iter % self.iters == 0 or env_step - self.last_env_step >= self.env_steps:
            self.last_env_step = env_step
            return True
        return False


@dataclass
class _ScheduledHook:
    fn: Hook
    period: Period


@dataclass
class _Phase:
    guard: FiniteGuard
    monitored: list[str]
    logged: list[str]
    updates: int = 0
    starts: list[tuple[int, int]] = field(default_factory=list)  # (updates before, train_iter) per run of it


class Learner:
    """Counts train iterations and runs hooks on their `Period` (every N of them, or every M env steps).

    The policy returns its losses as 0-d tensors; they are turned into Python floats only on the
    iterations a hook runs, so the other updates never wait on the device. A `FiniteGuard` watches
    the monitored values meanwhile, on the device too. The logs write the monitored values and every other
    scalar the first update returned (`logged_names`).
    """

    def __init__(self, policy: LearnMode, device: Optional[torch.device] = None) -> None:
        self.policy = policy
        self.train_iter = 0
        self.device = torch.device(device or 'cpu')
        self.guard = FiniteGuard(self.device)
        self._monitored = policy.monitor_vars()
        self._logged: Optional[list[str]] = None  # fixed by the first update
        self._guard_start = 0  # train_iter when the guard started counting
        self._hooks: list[_ScheduledHook] = []
        self._phases: dict[str, _Phase] = {}
        self._phase_info: dict[str, Any] = {}  # the latest values of every auxiliary phase

    def register_hook(self, fn: Hook, every: int | Period) -> None:
        """Run `fn` after every `every` train iterations, or on a `Period`."""
        self._hooks.append(_ScheduledHook(fn, every if isinstance(every, Period) else Period(every)))

    def train(self, batch: dict[str, Any]) -> dict[str, Any]:
        """One counted update; hooks see its values with the latest ones of any auxiliary phase."""
        return self.record(self.policy.forward(batch))

    def record(self, info: dict[str, Any]) -> dict[str, Any]:
        """Count an update made elsewhere (a seed group's stacked update) as `train` counts its own."""
        if self._logged is None:
            self._logged = logged_names(info, self._monitored, self.policy, '_monitor_vars_learn')
        self.guard.observe(info, self._monitored)
        self.train_iter += 1
        for hook in self._hooks:
            if hook.period.due(self.train_iter):
                hook.fn(self, {**self._phase_info, **info})
        return info

    def train_phase(self, name: str, mode: LearnMode, batch: dict[str, Any]) -> dict[str, Any]:
        """One update of an auxiliary phase (PPG's): not a train iteration and no hooks, but its values
        are watched by a guard of its own and logged with the next counted update's."""
        return self.record_phase(name, mode, mode.forward(batch))

    def start_phase(self, mode: LearnMode) -> None:
        """Open an auxiliary phase (`mode.reset()`: PPG freezes pi_old)."""
        mode.reset()

    def record_phase(self, name: str, mode: LearnMode, info: dict[str, Any]) -> dict[str, Any]:
        """Count an auxiliary update made elsewhere (a seed group's) as `train_phase` counts its own."""
        phase = self._phases.get(name)
        if phase is None:
            monitored = mode.monitor_vars()
            logged = logged_names(info, monitored, mode, f"the monitor_vars of its '{name}' phase")
            phase = self._phases[name] = _Phase(FiniteGuard(self.device), monitored, logged)
        if not phase.starts or phase.starts[-1][1] != self.train_iter:
            phase.starts.append((phase.updates, self.train_iter))
        phase.guard.observe(info, phase.monitored)
        phase.updates += 1
        self._phase_info.update(info)
        return info

    @property
    def logged_names(self) -> list[str]:
        """The names a log writes: the learn mode's and each phase's, as their first updates fixed them."""
        names = list(self._monitored if self._logged is None else self._logged)
        for phase in self._phases.values():
            names += [name for name in phase.logged if name not in names]
        return names

    def restart_guard_at(self, train_iter: int) -> None:
        """Count the guard's iterations from `train_iter` (a resumed run)."""
        self.train_iter = self._guard_start = train_iter

    def first_failure(self) -> Optional[tuple[str, float, int]]:
        """(monitor key, value, train iteration) of the first non-finite value so far, or None.

        A phase's failure is dated by the train iteration its phase ran after."""
        failures = []
        main = self.guard.first_failure(self._guard_start)
        if main is not None:
            failures.append(main)
        for phase in self._phases.values():
            failure = phase.guard.first_failure()
            if failure is not None:
                key, value, update = failure  # the guard counts this phase's updates from 1
                iteration = max(it for first, it in phase.starts if first < update)
                failures.append((key, value, iteration))
        return min(failures, key=lambda failure: failure[2]) if failures else None


    def check_finite(self, model: torch.nn.Module, env_step: int, last_good: str) -> None:
        """Stop at the first NaN or inf in a monitored value or a parameter of `model`, naming it (and
        `last_good`: where the last good checkpoint is)."""
        failure = self.first_failure()
        if failure is not None:
            key, value, iteration = failure
            raise NonFiniteError(f'{key} became {value} at train iteration {iteration} (env step '
                                 f'{env_step} when seen); {last_good}')
        name = first_non_finite_parameter(model.named_parameters())
        if name is not None:
            raise NonFiniteError(f'parameter {name} is not finite by train iteration {self.train_iter}; {last_good}')


def logged_names(info: dict[str, Any], monitored: list[str], mode: LearnMode, lister: str) -> list[str]:
    """The names to log of a learn mode's updates, from its first update's `info`: the `monitored` ones, which it
    must all return (`lister` names where the policy lists them), then every other scalar it returned, which the
    logs would otherwise drop without a word."""
    missing = [name for name in monitored if name not in info]
    if missing:
        cfg = getattr(mode, 'cfg', None)
        policy = f"policy '{cfg.get('type')}'" if cfg is not None and cfg.get('type') else 'the policy'
        returned = ', '.join(repr(name) for name in info) or 'nothing'
        raise PolicyError(f"{policy}: {lister} lists {', '.join(repr(name) for name in missing)}, which its first "
                          f"update did not return (it returned {returned})")
    return [*monitored, *(name for name, value in info.items() if name not in monitored and _is_scalar(value))]


def _is_scalar(value: Any) -> bool:
    """A number or a 0-d tensor or array: what a log can write (a per-sample 'priority' is not)."""
    if isinstance(value, (torch.Tensor, np.ndarray)):
        return value.ndim == 0
    return isinstance(value, numbers.Real)


def scalars(info: dict[str, Any], names: list[str]) -> dict[str, float]:
    """The named entries of a learn output (0-d tensors or numbers) as Python floats."""
    return {name: float(info[name]) for name in names if name in info}
