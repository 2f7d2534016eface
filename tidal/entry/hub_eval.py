"""Scoring an exported agent.pt as the Open RL Leaderboard runs it: the TorchScript file alone, on the env
gymnasium.make gives (no tidal wrapper), a batch of raw observations in and the env's actions out.

The first scored episode is recorded as the model repo's replay.mp4, so the video shows the file that was scored.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import gymnasium
import numpy as np
import torch
from gymnasium import spaces as gym_spaces

from tidal.base.errors import EnvError, TidalError, one_line
from tidal.envs.video import check_recordable, mp4_encoder_missing, require_rgb_array, write_video

HUB_EXTRA = 'pip install -e ".[hub]"'


@dataclass(frozen=True)
class AgentScore:
    """The returns of `len(returns)` episodes, episode i reset with seed `seed + i`."""

    returns: np.ndarray
    seed: int

    @property
    def mean_reward(self) -> str:
        """The Hub's `mean_reward` value: mean +/- std (population) of the episode returns."""
        return f'{float(self.returns.mean()):.2f} +/- {float(self.returns.std()):.2f}'


def make_raw_env(env_id: str, env_kwargs: Mapping[str, Any], render: bool = False) -> gymnasium.Env:
    """gymnasium.make(env_id, **env_kwargs), as the leaderboard makes it; whatever it raises is one EnvError."""
    kwargs = dict(env_kwargs)
    if render:
        kwargs['render_mode'] = 'rgb_array'
        os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')  # pygame draws off-screen on a machine without a display
    try:
        return gymnasium.make(env_id, **kwargs)
    except Exception as err:
        raise EnvError(f"gymnasium.make('{env_id}') fails: {type(err).__name__}: {one_line(err)}") \
            from err


def raw_observation_dtype(env_id: str, env_kwargs: Mapping[str, Any], adapter_env: gymnasium.Env) -> torch.dtype:
    """The dtype of the raw env's observations, after checking that they are the adapter's up to that dtype
    (and the actions the same): agent.pt gets what gymnasium gives, not what tidal's wrappers make of it."""
    raw = make_raw_env(env_id, env_kwargs)
    raw_obs, raw_action, metadata = raw.observation_space, raw.action_space, raw.metadata
    raw.close()
    obs, action = adapter_env.observation_space, adapter_env.action_space
    if not (isinstance(raw_obs, gym_spaces.Box) and isinstance(obs, gym_spaces.Box) and raw_obs.shape == obs.shape):
        raise TidalError(f"tidal export --hub needs observations as gymnasium.make('{env_id}') gives them, which the "
                         f"Open RL Leaderboard feeds agent.pt; the run's env gives {obs}, gymnasium {raw_obs}")
    same_actions = (isinstance(raw_action, gym_spaces.Discrete) and isinstance(action, gym_spaces.Discrete)
                    and raw_action.n == action.n and raw_action.start == 0) or \
        (isinstance(raw_action, gym_spaces.Box) and isinstance(action, gym_spaces.Box)
         and raw_action.shape == action.shape)
    if not same_actions:
        raise TidalError(f"tidal export --hub needs the actions gymnasium.make('{env_id}') takes; the run's env "
                         f"takes {action}, gymnasium {raw_action}")
    require_rgb_array(env_id, metadata)  # for replay.mp4
    return torch.from_numpy(np.zeros(0, dtype=raw_obs.dtype)).dtype


def require_mp4() -> None:
    missing = mp4_encoder_missing()
    if missing is not None:
        raise TidalError(f'tidal export --hub writes replay.mp4, which needs an MP4 encoder ({missing}): {HUB_EXTRA}')


def require_frames(env_id: str, env_kwargs: Mapping[str, Any]) -> None:
    """Render one frame of the raw env before anything is written: replay.mp4 needs its frames, and a package it
    draws with (pygame, for classic control) missing is one line naming the extra that brings it."""
    check_recordable(lambda: make_raw_env(env_id, env_kwargs, render=True), env_id, HUB_EXTRA)


def load_agent(path: Path) -> torch.jit.ScriptModule:
    with warnings.catch_warnings():  # torch 2.13 marks torch.jit deprecated; the leaderboard loads agent.pt with it
        warnings.filterwarnings('ignore', category=DeprecationWarning)
        return torch.jit.load(str(path), map_location='cpu')


def score_agent(path: Path, env_id: str, env_kwargs: Mapping[str, Any], episodes: int, seed: int,
                replay: Path) -> AgentScore:
    """Run the file at `path` for `episodes` episodes on the raw env, recording the first into `replay`."""
    agent = load_agent(path)
    env = make_raw_env(env_id, env_kwargs, render=True)
    returns = []
    try:
        for episode in range(episodes):
            obs, _ = env.reset(seed=seed + episode)
            frames = [_frame(env)] if episode == 0 else None
            total, done = 0.0, False
            while not done:
                with torch.no_grad():
                    action = agent(torch.as_tensor(np.asarray(obs)[None]))[0].numpy()
                obs, reward, terminated, truncated, _ = env.step(action)
                total += float(reward)
                done = terminated or truncated
                if frames is not None:
                    frames.append(_frame(env))
            returns.append(total)
            if frames is not None:
                write_video(replay, frames, int(env.metadata.get('render_fps') or 30))
    finally:
        env.close()
    return AgentScore(np.asarray(returns), seed)


def _frame(env: gymnasium.Env) -> np.ndarray:
    frame = env.render()
    if not isinstance(frame, np.ndarray):
        raise EnvError(f'env {env.spec.id if env.spec else env} returned {type(frame).__name__} from render(), '
                       f'not an rgb_array frame')
    return frame
