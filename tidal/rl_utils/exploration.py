"""Exploration schedules: how much of collection acts at random, by the env steps collected."""
from __future__ import annotations

import math
from typing import Any, Mapping

from tidal.base.errors import ConfigError


def epsilon_at(env_step: int, schedule: Mapping[str, Any]) -> float:
    """epsilon after `env_step` env steps under `schedule` (other.eps): start + (end - start) * min(1, steps / decay)
    for 'linear', end + (start - end) * exp(-steps / decay) for 'exp'."""
    start, end, decay = float(schedule['start']), float(schedule['end']), schedule['decay']
    if schedule['type'] == 'linear':
        return start + (end - start) * min(1.0, env_step / decay)
    if schedule['type'] == 'exp':
        return end + (start - end) * math.exp(-env_step / decay)
    raise ConfigError(f"policy.other.eps.type must be 'linear', 'exp' or None, got {schedule['type']!r}")
