"""Env managers: step a batch of envs together on top of gymnasium's vector envs.

Envs reset in the same step their episode ends (gymnasium's SAME_STEP autoreset), so every `step`
yields one valid transition per env: `next_obs` is the true successor of the acted-on obs, while
`obs` is what to act on next. Both managers keep running episode returns so collectors and
evaluators read finished episodes off each `Step` without their own bookkeeping. `snapshot` and
`restore` carry the envs' full state through a checkpoint, so a resumed run continues mid-episode.

An env whose reward is a vector (one per agent) reports it as `info['reward_vector']` beside a scalar
reward (their sum), since gymnasium's vector envs batch only scalar rewards: `Step.reward` is then the
vector, and episode returns add up the scalar.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Iterable, Mapping

import gymnasium
import numpy as np
import torch
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv
from gymnasium.vector.async_vector_env import AsyncState
from gymnasium.vector.utils import concatenate, create_empty_array

from tidal.envs.snapshot import (EnvSnapshotError, check_fits, restore_space_rng, snapshot_space_rng)
from tidal.base.errors import ConfigError, EnvError, one_line
from tidal.registry import ENV_MANAGER_REGISTRY

EnvFn = Callable[[], gymnasium.Env]


@dataclass
class Step:
    """One batched env step; every array has the env index as its leading dimension.

    `obs` and `next_obs` may be the same object where no episode ended; treat both as read-only.
    """

    obs: Any                     # observation to act on next: a new episode's first obs where one ended
    next_obs: Any                # true successor of the acted-on obs: the final obs where an episode ended
    reward: np.ndarray           # float32 [N], or [N, agents] for an env that reports info['reward_vector']
    terminated: np.ndarray       # bool [N]: the MDP ended; do not bootstrap
    truncated: np.ndarray        # bool [N]: cut off (time limit); bootstrap from next_obs
    episode_return: np.ndarray   # float64 [N]: return of the episode that ended here, NaN elsewhere
    episode_length: np.ndarray   # int64 [N]: length of the episode that ended here, 0 elsewhere
    info: dict                   # gymnasium's vector info (incl. 'final_obs' and 'final_info')

    @property
    def done(self) -> np.ndarray:
        """Envs whose episode ended at this step, for either reason."""
        return self.terminated | self.truncated


class EnvManager:
    """The shared logic of the managers; subclasses only choose the vector env (gymnasium's, EnvPool's, or CartPole's
    arrays)."""

    config: dict = dict(
        # (str) Registered env manager: 'base' (envs in this process), 'subprocess' (one process per env),
        # 'envpool' (EnvPool's C++ threads; extra envpool) or 'numpy' (CartPole-v1 as arrays, the same steps as 'base').
        type='base',
    )
    #: Whether the manager steps the envs its env functions make, so that they can record videos.
    steps_own_envs: ClassVar[bool] = True

    def __init__(self, env_fns: list[EnvFn], name: str = 'env', role: str = 'env',
                 env_cfg: Mapping[str, Any] | None = None) -> None:
        self.name, self.role = name, role  # for errors: "env 'Pendulum-v1' (collector env 1) ..."
        self.env_cfg = env_cfg  # the env section, for a manager that builds its envs from it (EnvPool)
        if not env_fns:
            raise ConfigError('an env manager needs at least one env (env.collector_env_num / '
                              'env.evaluator_env_num must be >= 1)')
        self._vector_env = self._make_vector_env(list(env_fns))
        self.num_envs: int = self._vector_env.num_envs
        self.observation_space: gymnasium.Space = self._vector_env.single_observation_space
        self.action_space: gymnasium.Space = self._vector_env.single_action_space
        self._running_return = np.zeros(self.num_envs, dtype=np.float64)
        self._running_length = np.zeros(self.num_envs, dtype=np.int64)
        self._has_reset = False

    def _make_vector_env(self, env_fns: list[EnvFn]) -> SyncVectorEnv | AsyncVectorEnv:
        raise NotImplementedError

    def reset(self, seed: int | None = None) -> Any:
        """Start a new episode in every env; env i is seeded with `seed + i`."""
        try:
            obs, _ = self._vector_env.reset(seed=seed)
        except Exception as err:  # say which env failed, as step does
            raise EnvError(f"env '{self.name}' ({self.role} envs) raised {type(err).__name__} on reset: "
                           f"{one_line(err) or type(err).__name__}") from err
        if seed is not None:
            self._vector_env.action_space.seed(seed)
        self._running_return[:] = 0.0
        self._running_length[:] = 0
        self._has_reset = True
        return obs

    def step(self, actions: np.ndarray) -> Step:
        if not self._has_reset:
            raise RuntimeError('call reset() before the first step()')
        try:
            obs, reward, terminated, truncated, info = self._vector_env.step(self._fit_actions(actions))
        except Exception as err:  # the env's own bug or a bad env argument: say which env and when
            step = int(self._running_length.max()) + 1
            raise EnvError(f"env '{self.name}' ({self.role} envs) raised {type(err).__name__} in step {step} of "
                           f"its episode: {one_line(err) or type(err).__name__}") from err
        next_obs = self._next_obs(obs, info)
        step_reward = self._step_reward(reward, info)
        # next_obs is obs itself unless an episode ended: check it once
        self._check_finite(step_reward, obs, *(() if next_obs is obs else (next_obs,)))
        done = terminated | truncated
        self._running_return += reward
        self._running_length += 1
        episode_return = np.where(done, self._running_return, np.nan)
        episode_length = np.where(done, self._running_length, 0)
        self._running_return[done] = 0.0
        self._running_length[done] = 0
        return Step(obs=obs, next_obs=next_obs, reward=step_reward.astype(np.float32),
                    terminated=terminated, truncated=truncated, episode_return=episode_return,
                    episode_length=episode_length, info=info)

    def _check_finite(self, reward: np.ndarray, *observations: Any) -> None:
        """A NaN or inf from an env would poison every update that samples it: stop at the source."""
        for what, values in (('reward', reward), *(('observation', obs) for obs in observations)):
            for leaf in _float_leaves(values):
                if np.isfinite(leaf).all():  # the common case, checked in one pass
                    continue
                finite = np.isfinite(leaf.reshape(self.num_envs, -1)).all(axis=1)
                if not finite.all():
                    index = int(np.flatnonzero(~finite)[0])
                    value = leaf[index] if leaf.ndim == 1 else leaf[index][~np.isfinite(leaf[index])].flat[0]
                    raise EnvError(f"env '{self.name}' ({self.role} env {index}) returned a non-finite {what} "
                                   f"({value}) in step {self._running_length[index] + 1} of its episode")

    def plan_videos(self, paths: list[list[str]]) -> None:
        """Record env i's next episodes, from its next reset, into the files `paths[i]` (one per episode);
        the envs must be made for recording (`make(role, render=True)`)."""
        if not all(self._vector_env.call('has_wrapper_attr', 'planned_videos')):
            raise EnvError(f"env '{self.name}' ({self.role} envs) was not made for recording (make(render=True))")
        self._vector_env.set_attr('planned_videos', [list(env_paths) for env_paths in paths])

    def sample_actions(self) -> np.ndarray:
        """Uniform random actions for every env (the warm-up before training); seeded by `reset`."""
        return self._vector_env.action_space.sample()

    def snapshot(self) -> dict:
        """Where every env stands, as plain data a `weights_only` checkpoint can hold.

        'envs' is None, and 'reason' says why, when an env holds state that is not plain data; a run
        resumed from such a snapshot starts new episodes instead.
        """
        envs, reason = self._env_snapshots()
        return dict(
            envs=envs,                # one snapshot_env dict per env, or None
            reason=reason,            # why 'envs' is None; '' when the envs are captured exactly
            action_space_rng=snapshot_space_rng(self._vector_env.action_space),  # drives sample_actions
            running_return=torch.from_numpy(self._running_return.copy()),
            running_length=torch.from_numpy(self._running_length.copy()),
            has_reset=self._has_reset,
        )

    def restore(self, state: dict) -> bool:
        """Put back a `snapshot()`: True when the envs continue exactly where they stood; False when the
        snapshot holds no envs, and the caller starts new episodes (and reports `state['reason']`)."""
        envs = state['envs']
        if envs is not None:
            self._check_fits(envs)
        restore_space_rng(self._vector_env.action_space, state['action_space_rng'])
        if envs is None:
            return False
        self._vector_env.set_attr('snapshot_state', list(envs))
        self._running_return[:] = state['running_return'].numpy()
        self._running_length[:] = state['running_length'].numpy()
        self._has_reset = bool(state['has_reset'])
        return True

    def _env_snapshots(self) -> tuple[list[dict] | None, str]:
        if not all(self._vector_env.call('has_wrapper_attr', 'snapshot_layers')):
            return None, _NOT_SNAPSHOTTABLE
        snapshots = self._vector_env.get_attr('snapshot_state')
        for snapshot in snapshots:
            if isinstance(snapshot, EnvSnapshotError):
                return None, str(snapshot)
        return list(snapshots), ''

    def _check_fits(self, envs: list[dict]) -> None:
        """Refuse a misfit before any env is touched (a worker that raises shuts down)."""
        if len(envs) != self.num_envs:
            raise EnvSnapshotError(f'the snapshot holds {len(envs)} envs, the manager steps {self.num_envs}')
        if not all(self._vector_env.call('has_wrapper_attr', 'snapshot_layers')):
            raise EnvSnapshotError(f'cannot restore envs: {_NOT_SNAPSHOTTABLE}')
        for snapshot, classes in zip(envs, self._vector_env.get_attr('snapshot_layers')):
            check_fits(snapshot, list(classes))

    def close(self) -> None:
        self._vector_env.close()

    def __enter__(self) -> EnvManager:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _fit_actions(self, actions: Any) -> np.ndarray:
        """Accept [N] for a one-dimensional Box and [N, 1] for Discrete, the shapes policies often emit."""
        actions = np.asarray(actions)
        space, n = self.action_space, self.num_envs
        if isinstance(space, gymnasium.spaces.Box) and space.shape == (1,) and actions.shape == (n,):
            return actions.reshape(n, 1)
        if isinstance(space, gymnasium.spaces.Discrete) and actions.shape == (n, 1):
            return actions.reshape(n)
        return actions

    def _step_reward(self, reward: np.ndarray, info: dict) -> np.ndarray:
        """The scalar rewards [N], or the envs' reward vectors [N, ...] where they report them; an env
        whose episode ended reports its last step's vector in 'final_info' (its reset's info is current)."""
        vector = info.get('reward_vector')
        if vector is None:
            return reward
        ended = info.get('_final_info')
        if ended is not None and ended.any():
            vector = vector.copy()
            vector[ended] = info['final_info']['reward_vector'][ended]
        return vector

    def _next_obs(self, obs: Any, info: dict) -> Any:
        """`obs` with the final observation written in for the envs whose episode ended."""
        ended = info.get('_final_obs')
        if ended is None or not ended.any():
            return obs
        rows = np.flatnonzero(ended)
        empty = create_empty_array(self.observation_space, n=len(rows))
        # gymnasium types `out` as never None, yet a custom Space's empty array is None and its concatenate takes it
        final = concatenate(self.observation_space, list(info['final_obs'][rows]), empty)  # type: ignore[arg-type]
        return _with_rows(obs, rows, final)


_NOT_SNAPSHOTTABLE = 'the envs are not wrapped in tidal.envs.snapshot.Snapshottable (GymEnv.make adds it)'


def _float_leaves(tree: Any) -> list[np.ndarray]:
    """The floating-point arrays of an obs (array, dict or tuple of them); integers are always finite."""
    if isinstance(tree, dict):
        return [leaf for value in tree.values() for leaf in _float_leaves(value)]
    if isinstance(tree, tuple):
        return [leaf for value in tree for leaf in _float_leaves(value)]
    array = np.asarray(tree)
    return [array] if array.dtype.kind == 'f' else []


def _with_rows(batch: Any, rows: np.ndarray, values: Any) -> Any:
    """A copy of a batched obs (array, dict or tuple of them) with `rows` replaced by `values`."""
    if isinstance(batch, dict):
        return {key: _with_rows(batch[key], rows, values[key]) for key in batch}
    if isinstance(batch, tuple):
        return tuple(_with_rows(part, rows, value) for part, value in zip(batch, values))
    replaced = batch.copy()
    replaced[rows] = values
    return replaced


@ENV_MANAGER_REGISTRY.register('base')
class BaseEnvManager(EnvManager):
    """All envs in this process, stepped one after another: fastest for cheap envs."""

    def _make_vector_env(self, env_fns: list[EnvFn]) -> SyncVectorEnv | AsyncVectorEnv:
        return SyncVectorEnv(env_fns, autoreset_mode=AutoresetMode.SAME_STEP)


@ENV_MANAGER_REGISTRY.register('subprocess')
class SubprocessEnvManager(EnvManager):
    """One worker process per env; pays off only when an env step is expensive (physics, rendering)."""

    def __init__(self, env_fns: list[EnvFn], context: str | None = None, **kwargs: Any) -> None:
        self._context = context  # multiprocessing start method; None: the platform default
        super().__init__(env_fns, **kwargs)

    def _make_vector_env(self, env_fns: list[EnvFn]) -> SyncVectorEnv | AsyncVectorEnv:
        return QuietAsyncVectorEnv(env_fns, context=self._context, autoreset_mode=AutoresetMode.SAME_STEP)


class QuietAsyncVectorEnv(AsyncVectorEnv):
    """gymnasium's AsyncVectorEnv, except that a worker's error comes back without being printed.

    gymnasium logs each failed worker's traceback to stderr before raising, which buried the run's
    one-line error under some 35 lines. Here the worker's traceback rides on the exception as a note:
    a run writes it to its log file (`log.txt`) with the run's own traceback, and the terminal shows
    the one line.
    """

    def _raise_if_errors(self, successes: Iterable[bool]) -> None:
        successes = list(successes)
        if all(successes):
            return
        failed = []
        for _ in range(len(successes) - sum(successes)):
            index, error_type, error, trace = self.error_queue.get()
            self.parent_pipes[index].close()
            # the worker has shut down; gymnasium marks its pipe None, as its own error path does (its
            # type says list of connections, its close() skips the None)
            self.parent_pipes[index] = None  # type: ignore[call-overload]
            failed.append((index, error_type, error, trace))
        self._state = AsyncState.DEFAULT
        failed.sort(key=lambda failure: failure[0])  # by env index, not by which worker answered first
        index, error_type, error, trace = failed[0]
        raised = error if isinstance(error, BaseException) else error_type(error)
        for other, _, _, other_trace in failed:
            raised.add_note(f'worker process of env {other}: {other_trace.rstrip()}')
        raise raised


def make_env_manager(env_fn: EnvFn, manager_type: str, num_envs: int, name: str = 'env',
                     role: str = 'env', env_cfg: Mapping[str, Any] | None = None) -> EnvManager:
    """`num_envs` copies of `env_fn` behind the manager registered as `manager_type`; `name` (the env id)
    and `role` ('collector', 'evaluator') make its errors say which env failed; `env_cfg` is the env
    section, which the 'envpool' manager builds its envs from."""
    manager_cls = ENV_MANAGER_REGISTRY.get(manager_type)
    return manager_cls([env_fn] * num_envs, name=name, role=role, env_cfg=env_cfg)
