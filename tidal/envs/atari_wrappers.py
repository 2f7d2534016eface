"""The Atari wrappers gymnasium lacks: lives as training episodes, FIRE after a reset, channel-last stacks.

gymnasium's `AtariPreprocessing` does the no-op reset, the frame skip with max-pooling and the 84x84 grey
frames; its `terminal_on_life_loss` restarts the whole game after a lost life, which is not the standard
episodic-life protocol (the game goes on; only the learner sees an episode end), hence `EpisodicLife`.
"""
from __future__ import annotations

from typing import Any, SupportsFloat

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces

NOOP, FIRE = 0, 1


def _lives(env: gymnasium.Env) -> int:
    return int(env.unwrapped.ale.lives())  # type: ignore[attr-defined]


class EpisodicLife(gymnasium.Wrapper):
    """A lost life ends the episode (`terminated`, so the value of the lost life is not bootstrapped); the
    following reset continues the same game with one NOOP step, and only a real game over, or a truncation,
    resets the emulator."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        self._lives = 0
        self._game_ended = True

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        self._game_ended = terminated or truncated
        lives = _lives(self.env)
        if 0 < lives < self._lives:
            terminated = True
        self._lives = lives
        return obs, reward, terminated, truncated, info

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        if self._game_ended or seed is not None:
            obs, info = self.env.reset(seed=seed, options=options)
        else:
            obs, _, terminated, truncated, info = self.env.step(NOOP)
            if terminated or truncated:  # the game ended during the NOOP
                obs, info = self.env.reset(options=options)
        self._game_ended = False
        self._lives = _lives(self.env)
        return obs, info


class FireOnReset(gymnasium.Wrapper):
    """Presses FIRE, then the next action, after each reset: games such as Breakout stay frozen until FIRE,
    and an untrained policy could wait for it until the episode is truncated."""

    @staticmethod
    def needs_fire(env: gymnasium.Env) -> bool:
        meanings = env.unwrapped.get_action_meanings()  # type: ignore[attr-defined]
        return len(meanings) >= 3 and meanings[FIRE] == 'FIRE'

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]:
        self.env.reset(seed=seed, options=options)
        for action in (FIRE, FIRE + 1):
            obs, _, terminated, truncated, info = self.env.step(action)
            if terminated or truncated:
                obs, info = self.env.reset(options=options)
        return obs, info


class ChannelLast(gymnasium.ObservationWrapper):
    """[stack, H, W] frame stacks (FrameStackObservation's layout) as [H, W, stack], the layout of tidal's
    image encoders; the newest frame stays last."""

    def __init__(self, env: gymnasium.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        assert isinstance(space, gym_spaces.Box) and len(space.shape) == 3, 'ChannelLast takes [stack, H, W]'
        self.observation_space = gym_spaces.Box(np.moveaxis(space.low, 0, -1), np.moveaxis(space.high, 0, -1),
                                                dtype=space.dtype)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(np.moveaxis(observation, 0, -1))
