"""An env whose steps take a set wall-clock time, for measuring how collection scales with workers.

`tidal/SimulatedCost-v0` wraps any gymnasium env and sleeps `step_seconds` in every step (and `reset_seconds` in
every reset) before stepping it: a stand-in for a physics simulator that costs milliseconds per step but, unlike
a busy loop, leaves the CPU free, so a 2-core machine can run 32 such workers side by side and measure what a
cluster would see. The wrapped env's dynamics, spaces and seeding are unchanged.

    env=dict(type='gym', env_id='tidal/SimulatedCost-v0',
             env_kwargs=dict(env_id='CartPole-v1', step_seconds=0.01))
"""
from __future__ import annotations

import time
from typing import Any, Optional

import gymnasium

from tidal.base.errors import ConfigError

ENV_ID = 'tidal/SimulatedCost-v0'


class SimulatedCost(gymnasium.Wrapper):
    """`env_id` made by gymnasium, each step delayed by `step_seconds` of sleep."""

    def __init__(self, env_id: str, step_seconds: float = 0.01, reset_seconds: float = 0.0, **env_kwargs: Any) -> None:
        for key, value in (('step_seconds', step_seconds), ('reset_seconds', reset_seconds)):
            if not (isinstance(value, (int, float)) and 0 <= value < float('inf')):
                raise ConfigError(f"env.env_kwargs.{key} must be a number of seconds >= 0, got {value!r}")
        super().__init__(gymnasium.make(env_id, **env_kwargs))
        self.step_seconds, self.reset_seconds = float(step_seconds), float(reset_seconds)

    def step(self, action: Any) -> Any:
        time.sleep(self.step_seconds)
        return self.env.step(action)

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> Any:
        if self.reset_seconds:
            time.sleep(self.reset_seconds)
        return self.env.reset(seed=seed, options=options)


if ENV_ID not in gymnasium.registry:
    gymnasium.register(ENV_ID, entry_point='tidal.envs.simulated_cost:SimulatedCost', disable_env_checker=True)
