"""Finite or stop: a watch for NaN and inf in what a learner reports, kept on the device.

Checking every update on the host would make each one wait for the device. Instead every update
folds its monitored values into two small device tensors (one op each), and the host reads them only
when it logs or checkpoints: the run still stops at the first bad iteration, by name and number.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Optional

import torch

from tidal.base.errors import TidalError


class NonFiniteError(TidalError):
    """A loss, a parameter or an env value became NaN or infinite; the run stops instead of going on."""


class FiniteGuard:
    """Remembers, per monitored key, the first train iteration whose value was not finite.

    Values on the guard's device are folded in there; values already on the host (numbers, CPU tensors such as
    a learning rate) are checked on the host, so that no update copies a value to the device and waits for it.
    """

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.keys: list[str] = []  # fixed by the first update: the monitored keys it reports
        self._device_keys: list[str] = []  # the monitored keys whose values live on the device, and the others
        self._host_keys: list[str] = []
        self._first_bad = torch.empty(0, dtype=torch.long, device=device)
        self._first_value = torch.empty(0, device=device)
        self._iteration = torch.zeros((), dtype=torch.long, device=device)
        self._host_iteration = 0
        self._host_failures: dict[str, tuple[int, float]] = {}  # key -> (iteration, value) of its first failure

    def observe(self, info: dict[str, Any], monitored: Iterable[str]) -> None:
        """Fold one update's values in, without reading the device's ones on the host."""
        self._iteration += 1
        self._host_iteration += 1
        if not self.keys:
            self.keys = [key for key in monitored if key in info]
            self._device_keys = [key for key in self.keys if not _on_host(info[key], self.device)]
            self._host_keys = [key for key in self.keys if key not in self._device_keys]
            self._first_bad = torch.full((len(self._device_keys), ), -1, dtype=torch.long, device=self.device)
            self._first_value = torch.zeros(len(self._device_keys), device=self.device)
        for key in self._host_keys:
            if key not in self._host_failures:
                value = float(info[key])
                if not math.isfinite(value):
                    self._host_failures[key] = (self._host_iteration, value)
        if not self._device_keys:
            return
        values = torch.stack([torch.as_tensor(info[key], dtype=torch.float32, device=self.device).reshape(())
                              for key in self._device_keys])
        new_bad = ~torch.isfinite(values) & (self._first_bad < 0)
        self._first_bad = torch.where(new_bad, self._iteration, self._first_bad)
        self._first_value = torch.where(new_bad, values, self._first_value)

    def first_failure(self, start_iter: int = 0) -> Optional[tuple[str, float, int]]:
        """(key, value, train iteration) of the earliest non-finite value seen, or None. Reads the device.

        `start_iter` is the train iteration the guard's count started from (a resumed run's)."""
        bad = self._first_bad.tolist()
        seen = [(iteration, self.keys.index(self._device_keys[index]), float(self._first_value[index]))
                for index, iteration in enumerate(bad) if iteration >= 0]
        seen += [(iteration, self.keys.index(key), value) for key, (iteration, value) in self._host_failures.items()]
        if not seen:
            return None
        iteration, index, value = min(seen)
        return self.keys[index], value, start_iter + iteration


def _on_host(value: Any, device: torch.device) -> bool:
    """A number, or a CPU tensor where the guard's device is another."""
    return not isinstance(value, torch.Tensor) or (value.device.type == 'cpu' and device.type != 'cpu')


def first_non_finite_parameter(named_parameters: Iterable[tuple[str, torch.Tensor]]) -> Optional[str]:
    """The name of the first parameter holding a NaN or inf, or None."""
    for name, parameter in named_parameters:
        if not bool(torch.isfinite(parameter).all()):
            return name
    return None
