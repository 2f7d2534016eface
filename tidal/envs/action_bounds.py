"""What the gymnasium adapter does to a policy's Box action before the env gets it, read off an env's wrappers.

An exported policy (`tidal export`) applies the same map, so that its output is the env's action.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces
from gymnasium.wrappers import RescaleAction

from tidal.envs.gym_env import ClipToBounds


@dataclass(frozen=True)
class ActionBounds:
    """A policy's action is clipped to [policy_low, policy_high] (ClipToBounds), then that range is mapped onto
    [env_low, env_high] affinely (RescaleAction; the same range where the adapter does not rescale)."""

    policy_low: np.ndarray
    policy_high: np.ndarray
    env_low: np.ndarray
    env_high: np.ndarray

    @property
    def scale(self) -> np.ndarray:
        """Env units per policy unit, in float64."""
        return (self.env_high.astype(np.float64) - self.env_low) / (self.policy_high.astype(np.float64) - self.policy_low)

    def env_action(self, action: np.ndarray) -> np.ndarray:
        """The map on numpy actions [..., *shape], in float64."""
        clipped = np.clip(np.asarray(action, np.float64), self.policy_low, self.policy_high)
        return self.env_low + (clipped - self.policy_low) * self.scale

    def policy_action(self, env_action: np.ndarray) -> np.ndarray:
        """The inverse map, for actions an env got (a dataset's): in float64, clipped to the env's bounds first."""
        clipped = np.clip(np.asarray(env_action, np.float64), self.env_low, self.env_high)
        return self.policy_low + (clipped - self.env_low) / self.scale


def action_bounds(env: gymnasium.Env) -> Optional[ActionBounds]:
    """The bounds of the adapter's action wrappers in `env` (one env as `GymEnv.make` wraps it); None where
    actions reach the env unchanged (discrete or unbounded)."""
    clip: Optional[gym_spaces.Box] = None
    rescale: Optional[RescaleAction] = None
    layer = env
    while isinstance(layer, gymnasium.Wrapper):
        if isinstance(layer, ClipToBounds) and clip is None:
            clip = layer.action_space  # type: ignore[assignment]  # ClipToBounds wraps Box spaces only
        if isinstance(layer, RescaleAction):
            rescale = layer
        layer = layer.env
    if clip is None:
        return None
    if rescale is None:
        return ActionBounds(clip.low, clip.high, clip.low, clip.high)
    inner = rescale.env.action_space
    assert isinstance(inner, gym_spaces.Box)
    return ActionBounds(clip.low, clip.high, inner.low, inner.high)
