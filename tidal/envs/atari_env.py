"""Env type 'atari': ALE games with the standard preprocessing of the Atari literature.

Every env: up to `noop_max` NOOPs after a reset, the action repeated `frame_skip` times with the last two
frames max-pooled (Atari sprites flicker between frames), grey frames resized to `screen_size`, and the
last `frame_stack` frames stacked channel-last ([H, W, stack] uint8, the newest last), FIRE pressed after a
reset in games that wait for it. The collector's envs also end an episode at each lost life and clip
rewards to their sign; the evaluator's play whole games and report the game's own score.
"""
from __future__ import annotations

import re
from typing import Optional, SupportsFloat

import gymnasium
import numpy as np
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation, TransformReward

from tidal.base.errors import EnvError
from tidal.envs.atari_wrappers import ChannelLast, EpisodicLife, FireOnReset
from tidal.envs.gym_env import EnvRole, GymEnv
from tidal.registry import ENV_REGISTRY

#: DI-engine's (and gym's) 'PongNoFrameskip-v4': the ALE game without sticky actions, minimal action set.
V4_ID = re.compile(r'(?P<game>[A-Za-z0-9]+)NoFrameskip-v4')
V4_SETTINGS = {'repeat_action_probability': 0.0, 'full_action_space': False}
#: env_kwargs that the preprocessing sets itself: the key that sets each instead.
_OWN_KWARGS = {'frameskip': 'env.frame_skip'}


@ENV_REGISTRY.register('atari')
class AtariEnv(GymEnv):
    """Creates preprocessed ALE games; the collector's and the evaluator's envs differ (see the module)."""

    config: dict = dict(
        # (str) ALE id, 'ALE/Pong-v5' (sticky actions, p=0.25, as ALE v5 defines it), or 'PongNoFrameskip-v4'
        # (DI-engine's ids: the same ALE game with no sticky actions and the minimal action set).
        env_id='',
        # (int in [1, 16]) Frames stacked into one observation, the newest last.
        frame_stack=4,
        # (bool) Collector envs end an episode (terminated) at each lost life; the game goes on in the next one.
        episode_life=True,
        # (bool) Collector envs give the sign of each reward (-1, 0, 1); evaluator envs give the game's score.
        clip_rewards=True,
        # (int in [0, 1000]) Up to this many NOOP actions (uniformly drawn) after each real reset.
        noop_max=30,
        # (int in [1, 16]) Emulator frames per agent step, the action repeated; the last two are max-pooled.
        frame_skip=4,
        # (int in [8, 512]) Side of the square grey frames, in pixels.
        screen_size=84,
    )

    def _make_raw(self, render_mode: Optional[str] = None) -> gymnasium.Env:
        env_id = self.env_id
        if not env_id:
            raise EnvError("env.env_id is not set (an Atari game such as 'ALE/Pong-v5')")
        ale_id, kwargs = ale_id_and_kwargs(env_id)
        for key, instead in _OWN_KWARGS.items():
            if key in (self.cfg.env_kwargs or {}):
                raise EnvError(f"env.env_kwargs.{key} is set for Atari env '{env_id}': set {instead} instead")
        kwargs.update(self.cfg.env_kwargs or {})
        kwargs['frameskip'] = 1  # AtariPreprocessing skips the frames and max-pools the last two
        if render_mode is not None:
            kwargs['render_mode'] = render_mode
        return self._gymnasium_make(ale_id, kwargs)

    def _preprocess(self, env: gymnasium.Env, role: EnvRole) -> gymnasium.Env:
        cfg = self.cfg
        training = role == 'collector'
        env = AtariPreprocessing(env, noop_max=cfg.noop_max, frame_skip=cfg.frame_skip,
                                 screen_size=cfg.screen_size)
        if training and cfg.episode_life:
            env = EpisodicLife(env)
        if FireOnReset.needs_fire(env):
            env = FireOnReset(env)
        if training and cfg.clip_rewards:
            env = TransformReward(env, _sign)
        env = FrameStackObservation(env, cfg.frame_stack)
        return ChannelLast(env)


def ale_id_and_kwargs(env_id: str) -> tuple[str, dict]:
    """The ALE id for `env_id` and the ALE settings its name implies ('PongNoFrameskip-v4': no sticky actions)."""
    match = V4_ID.fullmatch(env_id)
    if match:
        return f"ALE/{match['game']}-v5", dict(V4_SETTINGS)
    if env_id.startswith('ALE/'):
        return env_id, {}
    raise EnvError(f"Atari env id '{env_id}' (env.env_id) is neither an ALE id ('ALE/Pong-v5') nor a "
                   f"NoFrameskip-v4 id ('PongNoFrameskip-v4')")


def _sign(reward: SupportsFloat) -> float:
    return float(np.sign(float(reward)))
