"""Envs for the Ray collector's tests, importable by Ray workers (`import_names=['ray_test_envs']`)."""
from __future__ import annotations

import os
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

FAULTY_ID = 'tidal_test/RayFaulty-v0'


class FaultyEnv(gymnasium.Env):
    """A small continuous-control task that can fail on purpose.

    `fail`: 'none'; 'exit_once' (the process dies at step `fail_at`) or 'raise_once' (step raises), once
    per `marker` file, so a restarted worker runs on; 'reset_always' (every reset raises). Only in
    processes other than `spare_pid` (the test's own, whose evaluator envs must run on).
    """

    def __init__(self, fail: str = 'none', fail_at: int = 10, marker: str = '', spare_pid: int = 0) -> None:
        self.fail = 'none' if os.getpid() == spare_pid else fail
        self.fail_at, self.marker = fail_at, marker
        self.observation_space = spaces.Box(-10.0, 10.0, (3,), np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.state = np.zeros(3, np.float32)
        self.steps = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        if self.fail == 'reset_always':
            raise RuntimeError('reset fails on purpose')
        self.state = self.np_random.uniform(-1, 1, 3).astype(np.float32)
        return self.state.copy(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.steps += 1
        if self.fail in ('exit_once', 'raise_once') and self.steps >= self.fail_at and self._first_failure():
            if self.fail == 'exit_once':
                os._exit(1)
            raise RuntimeError('step fails on purpose')
        self.state = np.clip(0.9 * self.state + 0.1 * float(np.asarray(action).ravel()[0]), -10, 10).astype(np.float32)
        return self.state.copy(), -float(np.square(self.state).sum()), False, False, {}

    def _first_failure(self) -> bool:
        """True once per marker file, across processes (O_EXCL makes the claim atomic)."""
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False


if FAULTY_ID not in gymnasium.registry:
    gymnasium.register(FAULTY_ID, entry_point=FaultyEnv)
