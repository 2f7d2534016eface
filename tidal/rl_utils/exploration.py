"""Exploration: how much of collection acts at random, by the env steps collected, and noise on actions."""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import torch

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


def noisy_action(action: torch.Tensor, noise: torch.Tensor, noise_clip: Optional[tuple[float, float]] = None,
                 ) -> torch.Tensor:
    """action + noise, the noise first clipped to `noise_clip` (min, max) where given, the sum kept in the
    policy's action range [-1, 1]: DDPG's and TD3's exploration, and TD3's target policy smoothing."""
    if noise_clip is not None:
        noise = noise.clamp(noise_clip[0], noise_clip[1])
    return (action + noise).clamp(-1.0, 1.0)
