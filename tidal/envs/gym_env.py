"""The gymnasium adapter: env type 'gym' builds wrapped gymnasium envs from the `env` config section.

Wrapping is the same for every env so that policies see one convention: Box actions in [-1, 1]
(when `normalize_action`) and clipped to the bounds, float32 vector observations and uint8 images.
"""
from __future__ import annotations

import difflib
import os
import warnings
from typing import Callable, Literal, Optional, TypeGuard

import gymnasium
import numpy as np
from easydict import EasyDict
from gymnasium import spaces as gym_spaces
from gymnasium.wrappers import DtypeObservation, RescaleAction

from tidal.base.defaults import FreeDict, class_defaults, merge_defaults
from tidal.envs.snapshot import Snapshottable
from tidal.envs.video import EpisodeRecorder, require_rgb_array
from tidal.base.errors import EnvError, TidalError, one_line
from tidal.registry import ENV_REGISTRY

#: Who steps an env: the collector's envs may shape what the learner sees (Atari's lost lives end an episode,
#: rewards are clipped); the evaluator's play the task as it is scored.
EnvRole = Literal['collector', 'evaluator']


class ClipToBounds(gymnasium.ActionWrapper):
    """Clips Box actions to the bounds of the action space, which it keeps as they are.

    gymnasium's `ClipAction` widens the space to infinity instead, which would hide the bounds from
    everything reading the space (shape inference, demonstration metadata, random actions).
    """

    def action(self, action: np.ndarray) -> np.ndarray:
        space = self.action_space
        assert isinstance(space, gym_spaces.Box), 'ClipToBounds wraps Box action spaces only'
        return np.clip(action, space.low, space.high)


@ENV_REGISTRY.register('gym')
class GymEnv:
    """Creates copies of one gymnasium env and tells the policy which shapes to expect."""

    config: dict = dict(
        # (str) Registered env type; filled from create_config.env.type.
        type='',
        # (list[str]) Modules to import before the env type is looked up (a user's own env).
        import_names=[],
        # (str) gymnasium id passed to gymnasium.make, e.g. 'Pendulum-v1'.
        env_id='',
        # (int in [1, 4096]) Envs stepped together by the collector.
        collector_env_num=1,
        # (int in [1, 4096]) Envs stepped together by the evaluator.
        evaluator_env_num=1,
        # (int in [1, 10_000]) Episodes per evaluation.
        n_evaluator_episode=5,
        # (float in [-inf, inf] or None) Stop training once the mean eval return reaches this (None or inf: never).
        stop_value=None,
        # (bool) Rescale Box actions so the policy acts in [-1, 1].
        normalize_action=True,
        # Keyword arguments for gymnasium.make (e.g. max_episode_steps, or the env's own arguments).
        env_kwargs=FreeDict(),
    )

    def __init__(self, cfg: dict) -> None:
        self.cfg = EasyDict(merge_defaults(class_defaults(type(self)), cfg))
        self._spaces: tuple[gymnasium.Space, gymnasium.Space] | None = None

    @property
    def env_id(self) -> str:
        return self.cfg.env_id

    def make(self, role: EnvRole = 'collector', render: bool = False,
             record: Optional[Callable[[gymnasium.Env], gymnasium.Env]] = None) -> gymnasium.Env:
        """One env instance with tidal's wrappers, for the collector's or the evaluator's envs (`role`);
        pickles cleanly, so it can build envs in subprocesses.

        `record`: wraps the env as the env type makes it (`env_spaces`), below tidal's common wrappers, so that a
        dataset recorder (Minari's DataCollector) sees the env's own spaces and the actions the env gets.

        `render`: made with render_mode='rgb_array' and wrapped right above the raw env in an `EpisodeRecorder`,
        which renders only the episodes it is asked to record (every emulator frame of a whole Atari game).
        `Snapshottable` goes outermost so env managers can checkpoint the whole wrapper chain.
        """
        raw = self._make_raw('rgb_array' if render else None)
        env = self._preprocess(EpisodeRecorder(raw, self.env_id) if render else raw, role)
        if record is not None:
            env = record(env)
        action_space = env.action_space
        if self.cfg.normalize_action and _is_bounded_box(action_space) and not is_unit_box(action_space):
            env = RescaleAction(env, np.float32(-1.0), np.float32(1.0))
        if _is_bounded_box(env.action_space):
            # a Gaussian policy (PPO's) samples unbounded actions and learns from them as drawn; the env
            # gets them clipped to its bounds, whatever those are
            env = ClipToBounds(env)
        obs_space = env.observation_space
        if isinstance(obs_space, gym_spaces.Box):
            dtype = _observation_dtype(obs_space)
            if obs_space.dtype != dtype:
                with warnings.catch_warnings():  # the precision loss is the point of the cast
                    warnings.filterwarnings('ignore', message='.*precision lowered')
                    env = DtypeObservation(env, dtype)
        return Snapshottable(env)

    def spaces(self) -> tuple[gymnasium.Space, gymnasium.Space]:
        """(observation space, action space) of one wrapped env; built once, then cached."""
        if self._spaces is None:
            env = self.make()
            self._spaces = (env.observation_space, env.action_space)
            env.close()
        return self._spaces

    def env_spaces(self) -> tuple[gymnasium.Space, gymnasium.Space]:
        """(observation space, action space) of the env below tidal's common wrappers: those of a dataset that
        `make(record=...)` recorded."""
        env = self._preprocess(self._make_raw(), 'collector')
        try:
            return env.observation_space, env.action_space
        finally:
            env.close()

    def infer_shapes(self) -> dict:
        """The `policy.model` keys a model needs from the env, as plain Python values for the config."""
        obs_space, action_space = self.spaces()
        return dict(
            obs_shape=self._obs_shape(obs_space),
            action_shape=self._action_shape(action_space),
            action_space='discrete' if isinstance(action_space, gym_spaces.Discrete) else 'continuous',
        )

    def _preprocess(self, env: gymnasium.Env, role: EnvRole) -> gymnasium.Env:
        """The env type's own wrappers, inside tidal's common ones; the gym adapter has none."""
        return env

    def _make_raw(self, render_mode: Optional[str] = None) -> gymnasium.Env:
        """The env as gymnasium makes it; `render_mode` (None: the env_kwargs' own, if any) for recording."""
        env_id = self.env_id
        if not env_id:
            raise EnvError('env.env_id is not set')
        kwargs = dict(self.cfg.env_kwargs or {})
        if render_mode is not None:
            kwargs['render_mode'] = render_mode
        return self._gymnasium_make(env_id, kwargs)

    def _gymnasium_make(self, env_id: str, kwargs: dict) -> gymnasium.Env:
        """gymnasium.make, with whatever it raises turned into one EnvError naming env.env_id or env_kwargs."""
        if env_id.startswith('ALE/'):
            _import_ale(env_id)
        if env_id.startswith('MinAtar/'):
            _register_minatar(env_id)
        if kwargs.get('render_mode') == 'rgb_array':
            _check_renders_rgb_array(env_id)
            # frames are drawn off-screen: SDL's dummy video driver needs no display, and without it pygame's SDL
            # says 'XDG_RUNTIME_DIR is invalid' once per env on a machine without a desktop session
            os.environ.setdefault('SDL_VIDEODRIVER', 'dummy')
        try:
            return gymnasium.make(env_id, **kwargs)
        except (gymnasium.error.UnregisteredEnv, gymnasium.error.DeprecatedEnv) as err:
            raise EnvError(_unknown_id_message(env_id)) from err
        except TypeError as err:
            original = err.__cause__ or err  # gymnasium re-raises with the kwargs appended
            raise EnvError(f"env.env_kwargs do not fit gymnasium env '{env_id}': {one_line(original)}") from err
        except (ImportError, gymnasium.error.DependencyNotInstalled) as err:
            raise EnvError(f"gymnasium env '{env_id}' (env.env_id) cannot be created: {one_line(err)}") from err
        except TidalError:
            raise
        except Exception as err:
            # the env's constructor or a gymnasium wrapper refusing a value the user passed
            # (max_episode_steps=-5): whatever it raises, the kwargs are the user's to fix
            raise EnvError(f"gymnasium env '{env_id}' cannot be made with env.env_kwargs {kwargs}: "
                           f"{type(err).__name__}: {one_line(err)}") from err

    def _obs_shape(self, space: gymnasium.Space) -> int | list[int]:
        if isinstance(space, gym_spaces.Dict) and {'observation', 'action_mask'} <= set(space.spaces):
            space = space['observation']
        if isinstance(space, gym_spaces.Box):
            return _shape(space.shape)
        raise EnvError(f"cannot infer policy.model.obs_shape from the observation space {space} of "
                       f"'{self.env_id}' (env.env_id): expected a Box, or a Dict with 'observation' "
                       f"and 'action_mask'")

    def _action_shape(self, space: gymnasium.Space) -> int | list[int]:
        if isinstance(space, gym_spaces.Discrete) and space.start == 0:
            return int(space.n)
        if isinstance(space, gym_spaces.Box) and len(space.shape) == 1:
            return int(space.shape[0])
        raise EnvError(f"cannot infer policy.model.action_shape from the action space {space} of "
                       f"'{self.env_id}' (env.env_id): expected Discrete(n) or a 1-D Box")


def _shape(shape: tuple[int, ...]) -> int | list[int]:
    return int(shape[0]) if len(shape) == 1 else [int(size) for size in shape]


def _is_bounded_box(space: gymnasium.Space) -> TypeGuard[gym_spaces.Box]:
    return isinstance(space, gym_spaces.Box) and bool(space.is_bounded('both'))


def is_unit_box(space: gymnasium.Space) -> bool:
    """A Box whose bounds are -1 and 1 everywhere: the policy's actions need no rescaling."""
    return isinstance(space, gym_spaces.Box) and bool(np.all(space.low == -1.0) and np.all(space.high == 1.0))


def _observation_dtype(space: gym_spaces.Box) -> type:
    """float32 for vectors; images (3-D) of bytes or booleans stay one byte per value (uint8), which keeps
    replay and PPG's aux buffer four times smaller; the encoder casts them."""
    if len(space.shape) == 3 and space.dtype in (np.uint8, np.bool_):
        return np.uint8
    return np.float32


def _check_renders_rgb_array(env_id: str) -> None:
    """Refuse, before the env is made, an env whose class declares no 'rgb_array' render mode: gymnasium would
    pass render_mode to a constructor that may not take it. Ids gymnasium does not know are left to make."""
    try:
        spec = gymnasium.spec(env_id)
    except gymnasium.error.Error:
        return
    entry_point = spec.entry_point
    creator = gymnasium.envs.registration.load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
    require_rgb_array(env_id, getattr(creator, 'metadata', {}))


def _register_minatar(env_id: str) -> None:
    """MinAtar ids exist once `minatar.gym.register_envs()` has run."""
    if env_id in gymnasium.envs.registry:
        return
    try:
        import minatar.gym
    except ImportError as err:
        raise EnvError(f"gymnasium env '{env_id}' (env.env_id) needs the minatar package: "
                       f"pip install minatar") from err
    minatar.gym.register_envs()


def _import_ale(env_id: str) -> None:
    """Atari ids register themselves when ale_py is imported. The emulator's banner, printed by every new
    game, is silenced: its warnings and errors still show."""
    try:
        import ale_py
    except ImportError as err:
        raise EnvError(f"gymnasium env '{env_id}' (env.env_id) needs the ale-py package: "
                       f"pip install ale-py") from err
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Warning)


def _unknown_id_message(env_id: str) -> str:
    close = difflib.get_close_matches(env_id, list(gymnasium.envs.registry), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ''
    return f"unknown gymnasium env id '{env_id}' (env.env_id){hint}"
