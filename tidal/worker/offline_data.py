"""The dataset an offline run learns from, as transition columns of whole episodes end to end: a Minari dataset (an
id under Minari's root, or a folder), a demonstration file of `tidal collect-demos` (.npz), DI-engine's hdf5
transitions (.hdf5, .h5), or the replay a tidal run saved with its latest checkpoint (a run folder or a checkpoint
file: D4RL's "replay" datasets are made this way).

Every source gives the same columns (`obs`, `action`, `reward`, `next_obs`, `terminated`, `truncated`), with
actions in the policy's units, and the reference returns of a random and an expert policy where the dataset
carries them (Minari's `ref_min_score` and `ref_max_score`), for D4RL's normalised score.
"""
from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.errors import CheckpointError, ConfigError
from tidal.base.nest import leading_dim, shape_tuple
from tidal.config.ding.tables import HDF5_SUFFIXES
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.demos import Demos, check_demos, load_demos

FIELDS = ('obs', 'action', 'reward', 'next_obs', 'terminated', 'truncated')
DATA_KEY = 'policy.collect.data_path'
#: The columns of DI-engine's hdf5 transitions (its `hdf5_save`), which tidal reads.
DING_HDF5_COLUMNS = ('obs', 'action', 'reward', 'next_obs', 'done')
#: `policy.collect.reward_norm` -> what it does to the dataset's rewards.
REWARD_NORMS = {'none': 'rewards as recorded',
                'return_range': "rewards times 1000 / (best - worst return of the dataset's whole episodes), IQL's "
                                'and CORL\'s scaling for locomotion',
                'standardize': "rewards less their mean, over their standard deviation"}


@dataclass
class OfflineDataset:
    """Transitions of a fixed dataset, and what is known of its scores."""

    columns: dict[str, Any]                      # FIELDS, leading dim = transitions, on the CPU
    source: str                                  # where it came from, for messages
    ref_scores: Optional[tuple[float, float]]    # (random, expert) episode returns, or None

    @property
    def size(self) -> int:
        return leading_dim(self.columns['reward'])


def check_dataset_keys(cfg: Mapping[str, Any]) -> None:
    """Refuse a reward_norm tidal does not have, in one line naming the key."""
    how = cfg['policy']['collect'].get('reward_norm', 'none')
    if how not in REWARD_NORMS:
        raise ConfigError(f"policy.collect.reward_norm is {how!r}: one of "
                          f"{', '.join(f'{name!r} ({what})' for name, what in REWARD_NORMS.items())}")


def load_offline_dataset(cfg: EasyDict) -> OfflineDataset:
    """The dataset `policy.collect.data_path` names, checked against the run's env and spaces."""
    path = cfg.policy.collect.data_path
    if not path:
        raise ConfigError(f"policy '{cfg.policy.type}' learns offline: set {DATA_KEY} to a Minari dataset id or "
                          f"folder, a demonstration file (.npz) or a tidal run folder whose replay it learns from")
    source = Path(path).expanduser()
    if source.is_file() and source.suffix == '.pt' or (source / 'ckpt' / 'latest.pt').is_file():
        data = _from_replay(source, cfg)
    elif source.suffix in HDF5_SUFFIXES:
        data = _from_ding_hdf5(source, cfg)
    else:
        data = _from_demos(read_demos(str(path), DATA_KEY, cfg), str(path), cfg)
    data.columns['reward'] = normalized_rewards(data.columns, cfg.policy.collect.reward_norm, data.source)
    return data


def read_demos(path: str, key: str, cfg: EasyDict) -> Demos:
    """The episodes of a demonstration file (.npz) or of a Minari dataset (an id under Minari's root, or a folder)
    that the config key `key` names, refused when they come from another env or other shapes than the run's."""
    if _is_minari(path):
        if importlib.util.find_spec('minari') is None:
            raise ConfigError(f"{key}: '{path}' is not a demonstration file (.npz), and reading it as a Minari "
                              f'dataset needs the minari package: pip install -e ".[minari]"')
        from tidal.worker.minari_datasets import load_minari_demos
        return load_minari_demos(path, key, cfg.env)
    demos = load_demos(path)
    check_demos(demos, cfg.env.env_id, cfg.policy.model.obs_shape, cfg.policy.model.action_shape, path)
    return demos


def _is_minari(path: str) -> bool:
    """A Minari dataset (a folder, or an id like tidal/CartPole/expert-v0) rather than a demonstration file."""
    return Path(path).is_dir() or (not Path(path).is_file() and not path.endswith('.npz'))


def _from_demos(demos: Demos, source: str, cfg: EasyDict) -> OfflineDataset:
    meta = demos.metadata
    dataset = (meta['ref_min_score'], meta['ref_max_score']) if 'ref_min_score' in meta and 'ref_max_score' in meta \
        else None
    return OfflineDataset({field: demos.columns[field] for field in FIELDS}, source, reference_scores(cfg, dataset, source))


def _from_ding_hdf5(source: Path, cfg: EasyDict) -> OfflineDataset:
    """DI-engine's hdf5 transitions: one row per transition, its `done` the termination (DI-engine's files keep no
    truncation: `policy.learn.ignore_done` bootstraps through every end, as DI-engine's Pendulum configs do). An
    episode ends where its `done` is set or the next row does not start from its next observation; the last row
    ends one. Actions are taken as DI-engine's policy wrote them: in [-1, 1] under its act_scale, the units of
    tidal's policies with env.normalize_action."""
    if not source.is_file():
        raise ConfigError(f"{DATA_KEY}: DI-engine hdf5 file '{cfg.policy.collect.data_path}' does not exist")
    if importlib.util.find_spec('h5py') is None:
        raise ConfigError(f"{DATA_KEY}: reading the hdf5 file '{source}' needs the h5py package: pip install -e "
                          f'".[minari]"')
    import h5py
    try:
        with h5py.File(source, 'r') as file:
            missing = [name for name in DING_HDF5_COLUMNS if name not in file]
            if missing:
                raise ConfigError(f"{DATA_KEY}: hdf5 file '{source}' lacks the column(s) {', '.join(missing)} of "
                                  f"DI-engine's transitions ({', '.join(DING_HDF5_COLUMNS)})")
            raw = {name: torch.as_tensor(file[name][:]) for name in DING_HDF5_COLUMNS}
    except OSError as err:
        raise ConfigError(f"{DATA_KEY}: cannot read '{source}' as an hdf5 file: {err}") from err
    rows = len(raw['obs'])
    if any(len(column) != rows for column in raw.values()):
        raise ConfigError(f"{DATA_KEY}: the columns of hdf5 file '{source}' differ in length: "
                          f"{ {name: len(column) for name, column in raw.items()} }")
    terminated = raw['done'].reshape(rows).bool()
    breaks = torch.ones(rows, dtype=torch.bool)
    breaks[:-1] = (raw['next_obs'][:-1] != raw['obs'][1:]).reshape(rows - 1, -1).any(dim=1)
    columns = {'obs': raw['obs'].float(), 'action': _action_units(raw['action']), 'reward': raw['reward'].reshape(rows),
               'next_obs': raw['next_obs'].float(), 'terminated': terminated, 'truncated': breaks & ~terminated}
    check_columns(columns, cfg, str(source))
    return OfflineDataset(columns, str(source), reference_scores(cfg, None, str(source)))


def _action_units(action: torch.Tensor) -> torch.Tensor:
    """Integer actions (discrete) as indices, one per row (DI-engine may store them as [N, 1]); continuous ones as
    float32 rows of the action's size."""
    if not action.is_floating_point():
        return action.reshape(len(action)).long()
    return action.float().reshape(len(action), -1)


def check_columns(columns: dict[str, Any], cfg: EasyDict, source: str) -> None:
    """Refuse a dataset whose observations or actions do not have the run's shapes, naming both."""
    obs_shape = tuple(columns['obs'].shape[1:])
    expected = None if cfg.policy.model.obs_shape is None else shape_tuple(cfg.policy.model.obs_shape)
    if expected is not None and obs_shape != expected:
        raise ConfigError(f"{DATA_KEY}: '{source}' holds observations of shape {list(obs_shape)}, but env "
                          f"'{cfg.env.env_id}' gives {list(expected)}")
    action = columns['action']
    wanted = None if cfg.policy.model.action_shape is None else shape_tuple(cfg.policy.model.action_shape)
    if wanted is None:
        return
    if action.is_floating_point() and tuple(action.shape[1:]) != wanted:
        raise ConfigError(f"{DATA_KEY}: '{source}' holds actions of shape {list(action.shape[1:])}, but env "
                          f"'{cfg.env.env_id}' takes {list(wanted)}")
    if not action.is_floating_point() and len(action) and not 0 <= int(action.min()) <= int(action.max()) < wanted[0]:
        raise ConfigError(f"{DATA_KEY}: '{source}' holds actions {int(action.min())} to {int(action.max())}, but env "
                          f"'{cfg.env.env_id}' has actions 0 to {wanted[0] - 1}")


def normalized_rewards(columns: dict[str, Any], how: str, source: str) -> torch.Tensor:
    """The dataset's rewards as `policy.collect.reward_norm` says (REWARD_NORMS)."""
    reward = torch.as_tensor(columns['reward']).float()
    if how == 'none':
        return reward
    if how == 'standardize':
        return (reward - reward.mean()) / reward.std().clamp_min(1e-8)
    returns = episode_returns(reward, torch.as_tensor(columns['terminated']), torch.as_tensor(columns['truncated']))
    spread = max(returns) - min(returns) if returns else 0.0
    if not spread > 0 or not math.isfinite(spread):
        raise ConfigError(f"policy.collect.reward_norm 'return_range': the whole episodes of '{source}' all return "
                          f"the same ({returns[:1]}), so there is no range to scale by")
    return reward * (1000.0 / spread)


def episode_returns(reward: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor) -> list[float]:
    """The return of every episode the columns hold whole (ended by a termination or a truncation)."""
    ends = (terminated.bool() | truncated.bool()).nonzero().flatten().tolist()
    sums = torch.cumsum(reward.double(), dim=0)
    returns, before = [], 0.0
    for end in ends:
        returns.append(float(sums[end]) - before)
        before = float(sums[end])
    return returns


def _from_replay(source: Path, cfg: EasyDict) -> OfflineDataset:
    """The replay buffer saved in a run's latest checkpoint (or in the checkpoint file `source`), episode by
    episode."""
    path = source if source.is_file() else source / 'ckpt' / 'latest.pt'
    config = path.parent.parent / 'config.yaml'
    main_config = _run_config(config) if config.is_file() else {}
    env_id = main_config.get('env', {}).get('env_id', cfg.env.env_id)
    if env_id != cfg.env.env_id:
        raise CheckpointError(f"{DATA_KEY}: the replay in '{path}' comes from a run on env '{env_id}', but env.env_id "
                              f"is '{cfg.env.env_id}'")
    episodes = replay_episodes(path, int(main_config.get('env', {}).get('collector_env_num', 1)))
    columns = {field: torch.cat([torch.as_tensor(episode[field]) for episode in episodes]) for field in FIELDS}
    return OfflineDataset(columns, str(source), reference_scores(cfg, None, str(source)))


def _run_config(config: Path) -> dict[str, Any]:
    from tidal.config import read_config  # the config package reads files; only a replay source needs it here
    main_config, _ = read_config(str(config))
    return dict(main_config)


def replay_episodes(checkpoint: Path, num_envs: int) -> list[dict[str, Any]]:
    """The replay buffer a run saved with its checkpoint, cut into its episodes: each of its `num_envs` collector
    envs' rows (step-major, so env j's lie j, j + n, ...) in the order collected, split after every terminated or
    truncated transition; an episode the replay holds only the end of starts where it holds it, and one still
    running is marked truncated."""
    state = load_checkpoint(checkpoint)
    feed = state.get('feed')
    buffer = feed.get('buffer') if isinstance(feed, dict) else None
    if not isinstance(buffer, dict) or any(field not in buffer.get('columns', {}) for field in FIELDS):
        raise CheckpointError(f"{DATA_KEY}: checkpoint '{checkpoint}' holds no replay of transitions (a run of an "
                              f"off-policy policy saves one)")
    size, cursor, capacity = int(buffer['size']), int(buffer['cursor']), int(buffer['capacity'])
    order = torch.arange(size) if size < capacity else (torch.arange(size) + cursor) % capacity
    columns = {field: torch.as_tensor(buffer['columns'][field]) for field in FIELDS}
    episodes = []
    for env in range(num_envs):
        rows = order[env::num_envs]
        ended = columns['terminated'][rows].bool() | columns['truncated'][rows].bool()
        ends = ended.nonzero().flatten().tolist()
        if not ends or ends[-1] != len(rows) - 1:
            ends.append(len(rows) - 1)  # the episode still running when the run stopped
        start = 0
        for end in ends:
            episode = {field: columns[field][rows[start:end + 1]] for field in FIELDS}
            episode['truncated'] = episode['truncated'].bool() | (torch.arange(end + 1 - start) == end - start) \
                & ~episode['terminated'].bool()
            episodes.append(episode)
            start = end + 1
    return episodes


def next_actions(action: torch.Tensor, terminated: torch.Tensor, truncated: torch.Tensor) -> torch.Tensor:
    """The action the dataset took at each transition's next observation, for columns of whole episodes end to
    end: the next row's, or the row's own where its episode ends (no next action is known there; a terminated
    transition does not bootstrap, a truncated one bootstraps with it)."""
    following = torch.cat([action[1:], action[-1:]])
    ends = (terminated.bool() | truncated.bool()).reshape(-1, *([1] * (action.dim() - 1)))
    return torch.where(ends, action, following)


def reference_scores(cfg: EasyDict, dataset: Optional[tuple[float, float]], source: str) -> Optional[tuple[float, float]]:
    """(random, expert) returns for the normalised score: the config's (`policy.eval.ref_min_score`,
    `policy.eval.ref_max_score`) over the dataset's; None where neither gives both."""
    given = (cfg.policy.eval.ref_min_score, cfg.policy.eval.ref_max_score)
    if (given[0] is None) != (given[1] is None):
        raise ConfigError('policy.eval.ref_min_score and policy.eval.ref_max_score give a normalised score together: '
                          'set both or neither')
    scores = given if given[0] is not None else dataset
    if scores is not None and not scores[1] > scores[0]:
        raise ConfigError(f"reference returns of '{source}': the expert's ({scores[1]}) must exceed the random "
                          f"policy's ({scores[0]})")
    return None if scores is None else (float(scores[0]), float(scores[1]))


def as_tensors(columns: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Columns as tensors (rewards float32, the flags bool: a replay may store them otherwise), with the dataset's
    `next_action` beside them (ReBRAC's critic penalty reads it)."""
    out = {field: torch.as_tensor(columns[field]) for field in FIELDS}
    out['reward'] = out['reward'].float()
    out['terminated'], out['truncated'] = out['terminated'].bool(), out['truncated'].bool()
    out['next_action'] = next_actions(out['action'], out['terminated'], out['truncated'])
    return out
