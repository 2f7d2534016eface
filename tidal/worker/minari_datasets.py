"""Demonstrations as Minari datasets (minari 0.5, the extra 'minari'): recorded by Minari's own DataCollector and
read back as tidal's `Demos`, so that imitation can start from a dataset anyone can share.

A dataset holds the env's own spaces and the actions the env got (Pendulum's torques in [-2, 2]), not tidal's
(actions in [-1, 1], float32 observations): the collector wraps the env below tidal's common wrappers, and the
reader maps the actions back with the wrappers' own bounds. Terminations and truncations stay apart, as tidal
bootstraps on a truncation only. Datasets live under Minari's root, MINARI_DATASETS_PATH (else ~/.minari/datasets).
"""
from __future__ import annotations

import dataclasses
import functools
import warnings
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import gymnasium
import minari
import numpy as np
import torch
from easydict import EasyDict
from gymnasium import spaces as gym_spaces
from minari.data_collector import EpisodeBuffer
from minari.dataset.minari_dataset import parse_dataset_id
from minari.storage.datasets_root_dir import get_dataset_path

from tidal.base.errors import CheckpointError, ConfigError, one_line
from tidal.envs import GymEnv
from tidal.envs.action_bounds import action_bounds
from tidal.envs.env_manager import EnvManager, make_env_manager
from tidal.registry import ENV_REGISTRY
from tidal.worker.demos import Demos, as_demos


class _Recorder(minari.DataCollector):
    """Minari's DataCollector, except that a reset without a seed (an autoreset's) goes on with the env's own
    generator rather than a seed from the OS, so that one `-s SEED` always records the same dataset."""

    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None) -> tuple[Any, dict]:
        return super().reset(seed=seed, options={'minari_autoseed': False, **(options or {})})


class MinariWriter:
    """One collector env of `cfg` in this process, recorded by a DataCollector; `save` makes the dataset of the
    episodes stepped so far. One env, so the episodes are whole and in the order they were played."""

    def __init__(self, cfg: EasyDict, dataset_id: str) -> None:
        self.dataset_id = _new_dataset_id(dataset_id)
        env_type = ENV_REGISTRY.build(cfg.env.type, cfg.env)
        if not isinstance(env_type, GymEnv):
            raise ConfigError(f"--format minari records gymnasium envs: env type '{cfg.env.type}' is not one "
                              f"(an env type is recordable by subclassing tidal.envs.GymEnv)")
        self._recorders: list[_Recorder] = []
        make = functools.partial(env_type.make, 'collector', record=self._record)
        self.manager: EnvManager = make_env_manager(make, 'base', 1, env_type.env_id, 'collector', env_cfg=cfg.env)

    def _record(self, env: gymnasium.Env) -> gymnasium.Env:
        recorder = _Recorder(env)
        self._recorders.append(recorder)
        return recorder

    def save(self, metadata: Mapping[str, Any]) -> Path:
        """Write the dataset, with tidal's `metadata` (the policy and checkpoint that acted) beside Minari's."""
        recorder, = self._recorders
        with warnings.catch_warnings():  # Minari asks for an author and a code link, which tidal does not know
            warnings.filterwarnings('ignore', message='`(author|author_email|code_permalink)` is set to None',
                                    category=UserWarning)
            dataset = recorder.create_dataset(
                self.dataset_id, eval_env=recorder.env.spec, algorithm_name=f"tidal {metadata['policy']}",
                description=f"{len(metadata['returns'])} episodes of tidal policy '{metadata['policy']}' "
                            f"(checkpoint {metadata['checkpoint']}), recorded by tidal collect-demos")
        # tidal's own metadata, less the policy's spaces: Minari's keys say the dataset's, which are the env's own
        dataset.storage.update_metadata({'tidal': {key: value for key, value in metadata.items()
                                                   if key not in ('observation_space', 'action_space')}})
        return get_dataset_path(self.dataset_id)

    def close(self) -> None:
        self.manager.close()


def save_episodes(dataset_id: str, episodes: Sequence[Mapping[str, Any]], env_cfg: EasyDict,
                  ref_scores: tuple[float, float], description: str) -> Path:
    """Write `episodes` (tidal's transition columns, actions in the policy's units) as the Minari dataset
    `dataset_id`, in the env's own units and dtypes, with the reference returns of a random and an expert policy
    (`ref_min_score`, `ref_max_score`) that D4RL's normalised score reads."""
    dataset_id = _new_dataset_id(dataset_id)
    env_type = ENV_REGISTRY.build(env_cfg.type, env_cfg)
    env = env_type.make('collector')
    try:
        bounds = action_bounds(env)
        # the env as registered (its time limit too) with the run's keyword arguments, without tidal's wrappers
        registered = gymnasium.spec(env_type.env_id)
        spec = dataclasses.replace(registered, kwargs={**registered.kwargs, **dict(env_cfg.get('env_kwargs', {}))})
        obs_space, action_space = env_type.env_spaces()
    finally:
        env.close()
    buffers = []
    for index, episode in enumerate(episodes):
        observations = np.concatenate([np.asarray(episode['obs']), np.asarray(episode['next_obs'][-1:])])
        actions = np.asarray(episode['action'])
        if bounds is not None:
            actions = bounds.env_action(actions)
        buffers.append(EpisodeBuffer(
            id=index, observations=observations.astype(obs_space.dtype), actions=actions.astype(action_space.dtype),
            rewards=np.asarray(episode['reward'], np.float64), terminations=np.asarray(episode['terminated'], bool),
            truncations=np.asarray(episode['truncated'], bool)))
    with warnings.catch_warnings():  # Minari asks for an author and a code link, which tidal does not know
        warnings.filterwarnings('ignore', message='`(author|author_email|code_permalink)` is set to None',
                                category=UserWarning)
        minari.create_dataset_from_buffers(dataset_id, buffers, env=spec, eval_env=spec, algorithm_name='tidal build-datasets',
                                           ref_min_score=ref_scores[0], ref_max_score=ref_scores[1],
                                           description=description)
    return get_dataset_path(dataset_id)


def _new_dataset_id(dataset_id: str) -> str:
    """`dataset_id` if it is a well-formed Minari id not taken yet under Minari's root; else one line saying why."""
    try:
        parse_dataset_id(dataset_id)
    except (ValueError, TypeError):  # minari 0.5 raises TypeError for an id without -vN
        raise ConfigError(f"--dataset-id '{dataset_id}' is not a Minari dataset id: write it "
                          f"namespace/env/name-vN, e.g. tidal/CartPole/expert-v0") from None
    if get_dataset_path(dataset_id).exists():
        raise ConfigError(f"--dataset-id '{dataset_id}' exists already under Minari's root "
                          f"'{get_dataset_path()}' (MINARI_DATASETS_PATH): give it a new version (-vN)")
    return dataset_id


def load_minari_demos(source: str, key: str, env_cfg: EasyDict) -> Demos:
    """The episodes of the Minari dataset `source` (a dataset id under Minari's root, or a dataset's folder) as
    `Demos` in the spaces tidal's env of `env_cfg` gives the policy; `key` (the config key that named it) is in
    every error. A dataset of other spaces than the env's is refused."""
    dataset = _open(source, key)
    env_type = ENV_REGISTRY.build(env_cfg.type, env_cfg)
    if not isinstance(env_type, GymEnv):
        raise ConfigError(f"{key}: Minari datasets hold gymnasium envs' data, and env type '{env_cfg.type}' is not "
                          f"a gymnasium env")
    obs_space, action_space = env_type.env_spaces()
    if dataset.observation_space != obs_space or dataset.action_space != action_space:
        raise CheckpointError(
            f"{key}: Minari dataset '{source}' has observation space {one_line(dataset.observation_space)} and "
            f"action space {one_line(dataset.action_space)}, but env '{env_type.env_id}' (env.env_id) has "
            f"{one_line(obs_space)} and {one_line(action_space)}")
    env = env_type.make('collector')
    try:
        bounds, policy_obs_space = action_bounds(env), env.observation_space
    finally:
        env.close()

    def action(actions: np.ndarray) -> np.ndarray:
        if isinstance(action_space, gym_spaces.Discrete):
            return actions.astype(np.int64)
        return (actions if bounds is None else bounds.policy_action(actions)).astype(np.float32)

    episodes = [_transitions(episode, policy_obs_space, action) for episode in dataset.iterate_episodes()]
    if not episodes:
        raise CheckpointError(f"{key}: Minari dataset '{source}' has no episodes")
    returns = [float(episode['reward'].sum()) for episode in episodes]
    metadata = dataset.storage.metadata
    references = {key: float(metadata[key]) for key in ('ref_min_score', 'ref_max_score') if key in metadata}
    return as_demos(episodes, dict(metadata.get('tidal', {}), minari_dataset=source, env_id=env_type.env_id,
                                   returns=returns, **references))


def _open(source: str, key: str) -> Any:
    """The MinariDataset of a dataset folder (its root or its data/ folder) or of a dataset id."""
    folder = Path(source).expanduser()
    data = folder / 'data' if (folder / 'data').is_dir() else folder
    try:
        if folder.is_dir():
            return minari.MinariDataset(data)
        return minari.load_dataset(source)
    except FileNotFoundError:
        raise CheckpointError(f"{key}: '{source}' is neither a demonstration file (.npz), a Minari dataset folder "
                              f"nor a Minari dataset id under Minari's root '{get_dataset_path()}' "
                              f"(MINARI_DATASETS_PATH): download a Minari dataset with minari download ID, or build a "
                              f"D4RL-like suite of your own with tidal build-datasets") from None
    except ValueError as err:  # a folder that is not a dataset, a dataset of an unsupported version
        raise CheckpointError(f"{key}: Minari cannot read '{source}': {one_line(err)}") from None


def _transitions(episode: Any, obs_space: gymnasium.Space, action: Any) -> dict[str, Any]:
    """One Minari episode (T actions, T + 1 observations) as tidal's time-ordered transition columns."""
    observations = _as_policy_obs(episode.observations, obs_space)
    return {'obs': _tree_slice(observations, slice(None, -1)), 'next_obs': _tree_slice(observations, slice(1, None)),
            'action': torch.from_numpy(action(np.asarray(episode.actions))),
            'reward': torch.from_numpy(np.asarray(episode.rewards, np.float32)),
            'terminated': torch.from_numpy(np.asarray(episode.terminations, bool)),
            'truncated': torch.from_numpy(np.asarray(episode.truncations, bool))}


def _as_policy_obs(observations: Any, space: gymnasium.Space) -> Any:
    """Observations cast to the dtypes of tidal's observation space (float32 vectors), nested as it is."""
    if isinstance(space, gym_spaces.Dict):
        return {name: _as_policy_obs(observations[name], subspace) for name, subspace in space.spaces.items()}
    return torch.from_numpy(np.asarray(observations, dtype=space.dtype))


def _tree_slice(tree: Any, rows: slice) -> Any:
    return {name: _tree_slice(value, rows) for name, value in tree.items()} if isinstance(tree, dict) else tree[rows]

