"""Env manager 'envpool': a batch of envs stepped by EnvPool's C++ thread pool (extra `envpool`).

EnvPool resets an env on the call after its episode ended (gymnasium's NEXT_STEP autoreset): that call
ignores the env's action and returns the new episode's first obs with reward 0. tidal's managers reset in
the same step instead, so every step is one valid transition per env. `EnvPoolVectorEnv` turns the one
into the other: where episodes ended, it keeps EnvPool's observation as the final obs and steps those envs
once more at once, which EnvPool spends on their reset, so `EnvManager` builds the same `Step` records as
for gymnasium's envs. (EnvPool's own `reset(env_id)` would not do: it restarts an Atari game at every lost
life, where the auto-reset goes on with the game.)

EnvPool's envs live in C++ and cannot be saved: a checkpoint holds no envs, and a resumed run starts new
episodes (`EnvManager.restore` returns False with the reason).
"""
from __future__ import annotations

import warnings
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces as gym_spaces
from gymnasium.vector import VectorEnv
from gymnasium.vector.utils import batch_space

from tidal.base.errors import ConfigError, EnvError
from tidal.envs.env_manager import EnvFn, EnvManager
from tidal.envs.envpool_tasks import envpool_task
from tidal.envs.gym_env import is_unit_box
from tidal.envs.snapshot import EnvSnapshotError
from tidal.registry import ENV_MANAGER_REGISTRY

CANNOT_SNAPSHOT = "EnvPool's envs cannot be snapshot (env_manager.type 'envpool')"


class EnvPoolVectorEnv(VectorEnv):
    """EnvPool's envs as a gymnasium vector env with SAME_STEP autoreset and tidal's action and observation
    conventions (Box actions in [-1, 1] rescaled to the bounds and clipped; float32 vector observations).

    A seeded `reset` rebuilds the pool: EnvPool fixes its envs' seeds when it makes them (env i: seed + i,
    as in tidal's other managers).
    """

    def __init__(self, task_id: str, task_kwargs: dict[str, Any], num_envs: int, normalize_action: bool,
                 channel_last: bool = False, num_threads: int = 0) -> None:
        import envpool
        self._make_pool = lambda seed: envpool.make(task_id, env_type='gymnasium', num_envs=num_envs,
                                                    seed=seed, num_threads=num_threads, **task_kwargs)
        self._pool: Any = None  # made by the first reset, since a seed can only be given when it is made
        spec = envpool.make_spec(task_id, **task_kwargs)
        with warnings.catch_warnings():  # EnvPool builds its float32 Boxes from float64 bounds
            warnings.filterwarnings('ignore', message='.*precision lowered')
            raw_obs, raw_action = spec.gymnasium_observation_space, spec.gymnasium_action_space
        self.num_envs = num_envs
        self._obs_dtype = _observation_dtype(raw_obs)
        self._channel_last = channel_last  # EnvPool stacks Atari frames first: [stack, H, W]
        self.single_observation_space = _cast_box(raw_obs, self._obs_dtype, channel_last)
        self.single_action_space = _action_space(raw_action, normalize_action)
        self._bounds: tuple[np.ndarray, np.ndarray] | None = None  # EnvPool's action bounds (Box actions)
        if isinstance(raw_action, gym_spaces.Box):
            self._bounds = raw_action.low.astype(np.float64), raw_action.high.astype(np.float64)
        self._rescale = self.single_action_space != raw_action and is_unit_box(self.single_action_space)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._all_envs = np.arange(num_envs, dtype=np.int32)
        self._idle_actions = np.zeros((num_envs, *(raw_action.shape or ())), dtype=raw_action.dtype)

    def reset(self, *, seed: int | list[int] | None = None,
              options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        if isinstance(seed, list):
            raise EnvError("env_manager.type 'envpool' seeds env i with seed + i; it takes one seed, not a list")
        if seed is not None or self._pool is None:
            if self._pool is not None:
                self._pool.close()
            self._pool = self._make_pool(int(np.random.default_rng().integers(2**31)) if seed is None else seed)
        obs, info = self._pool.reset()
        return self._obs(obs), info

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self._pool.step(self._env_actions(actions), self._all_envs)
        obs = self._obs(obs)
        ended = terminated | truncated
        if ended.any():
            rows = np.flatnonzero(ended).astype(np.int32)
            start_obs = self._pool.step(self._idle_actions[:len(rows)], rows)[0]  # the action is not used
            # as gymnasium's vector envs give them: indexed by env, read only where `_final_obs` is set
            info = dict(info, final_obs=obs, _final_obs=ended)
            obs = obs.copy()
            obs[rows] = self._obs(start_obs)
        return obs, reward.astype(np.float32, copy=False), terminated, truncated, info

    def _env_actions(self, actions: Any) -> np.ndarray:
        """Discrete actions as they come; Box actions from [-1, 1] onto the bounds (when normalised), then
        clipped to them, as tidal's GymEnv wrappers (RescaleAction, ClipToBounds) do."""
        actions = np.asarray(actions)
        if self._bounds is None:
            return actions
        low, high = self._bounds
        actions = actions.astype(np.float64)
        if self._rescale:
            actions = low + (actions + 1.0) * 0.5 * (high - low)
        return np.clip(actions, low, high)

    def _obs(self, obs: np.ndarray) -> np.ndarray:
        if self._channel_last:
            return np.ascontiguousarray(obs.transpose(0, 2, 3, 1))
        return obs.astype(self._obs_dtype, copy=False)

    def close_extras(self, **kwargs: Any) -> None:
        if self._pool is not None:
            self._pool.close()

    # the snapshot calls of EnvManager: EnvPool's envs have no wrapper chain to save
    def call(self, name: str, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        if name == 'has_wrapper_attr':
            return (False,) * self.num_envs
        raise EnvSnapshotError(CANNOT_SNAPSHOT)

    def get_attr(self, name: str) -> tuple[Any, ...]:
        raise EnvSnapshotError(CANNOT_SNAPSHOT)

    def set_attr(self, name: str, values: list[Any] | tuple[Any, ...] | Any) -> None:
        raise EnvSnapshotError(CANNOT_SNAPSHOT)


@ENV_MANAGER_REGISTRY.register('envpool')
class EnvPoolManager(EnvManager):
    """EnvPool's C++ envs for the gymnasium and Atari tasks it covers; same `Step` records as 'base'.

    It builds the envs from the env section (`env_cfg`), not from `env_fns`, whose first entry only checks
    that EnvPool's spaces are the ones the policy was built for (the config infers them from gymnasium).
    """

    steps_own_envs = False  # EnvPool's C++ envs render nothing

    def __init__(self, env_fns: list[EnvFn], num_threads: int = 0, **kwargs: Any) -> None:
        self._num_threads = num_threads  # EnvPool's worker threads; 0: one per core
        super().__init__(env_fns, **kwargs)

    def _make_vector_env(self, env_fns: list[EnvFn]) -> EnvPoolVectorEnv:  # type: ignore[override]
        try:
            import envpool
        except ImportError as err:
            raise EnvError("env_manager.type 'envpool' needs the envpool package: "
                           'pip install -e ".[envpool]"') from err
        if self.env_cfg is None:
            raise ConfigError("env_manager.type 'envpool' builds its envs from the env section: pass env_cfg")
        env_cfg = self.env_cfg
        training = self.role != 'evaluator'
        task_id, task_kwargs = envpool_task(env_cfg, training, envpool.list_all_envs())
        vector_env = EnvPoolVectorEnv(task_id, task_kwargs, len(env_fns),
                                      normalize_action=bool(env_cfg.get('normalize_action', True)),
                                      channel_last=env_cfg.get('type') == 'atari',
                                      num_threads=self._num_threads)
        self._check_spaces(env_fns[0], vector_env, task_id)
        return vector_env

    def _check_spaces(self, env_fn: EnvFn, vector_env: EnvPoolVectorEnv, task_id: str) -> None:
        env = env_fn()
        try:
            expected = (env.observation_space, env.action_space)
        finally:
            env.close()
        found = (vector_env.single_observation_space, vector_env.single_action_space)
        for what, want, got in zip(('observation', 'action'), expected, found):
            if _space_layout(want) != _space_layout(got):
                raise EnvError(f"EnvPool's '{task_id}' has the {what} space {got}, the env '{self.name}' "
                               f"(env.env_id) has {want}: env_manager.type 'envpool' cannot stand in for it")

    def _env_snapshots(self) -> tuple[list[dict] | None, str]:
        return None, CANNOT_SNAPSHOT

    def _check_fits(self, envs: list[dict]) -> None:
        raise EnvSnapshotError(f'cannot restore envs: {CANNOT_SNAPSHOT}')


def _observation_dtype(space: gymnasium.Space) -> np.dtype:
    """float32 for vectors; images of bytes stay uint8, as the 'gym' env type keeps them."""
    if isinstance(space, gym_spaces.Box) and space.dtype == np.uint8:
        return np.dtype(np.uint8)
    return np.dtype(np.float32)


def _action_space(space: gymnasium.Space, normalize_action: bool) -> gymnasium.Space:
    """What the policy acts in: Box actions in [-1, 1] when normalised, else float32 within EnvPool's bounds."""
    if not isinstance(space, gym_spaces.Box):
        return space
    if normalize_action:
        return gym_spaces.Box(-1.0, 1.0, space.shape, np.float32)
    return gym_spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), space.shape, np.float32)


def _cast_box(space: gymnasium.Space, dtype: np.dtype, channel_last: bool) -> gymnasium.Space:
    """EnvPool's observation space as the manager hands out its observations."""
    if not isinstance(space, gym_spaces.Box):
        return space
    low, high = space.low.astype(dtype), space.high.astype(dtype)
    if channel_last:
        low, high = low.transpose(1, 2, 0), high.transpose(1, 2, 0)
    return gym_spaces.Box(low, high, low.shape, dtype)


def _space_layout(space: gymnasium.Space) -> tuple:
    """What a policy depends on: the kind, shape and dtype (Box), or the number of actions (Discrete)."""
    if isinstance(space, gym_spaces.Discrete):
        return ('discrete', int(space.n), int(space.start))
    if isinstance(space, gym_spaces.Box):
        return ('box', tuple(space.shape), np.dtype(space.dtype).name)
    return (type(space).__name__,)
