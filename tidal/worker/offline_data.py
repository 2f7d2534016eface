"""The dataset an offline run learns from, as transition columns of whole episodes end to end: a Minari dataset (an
id under Minari's root, or a folder), a demonstration file of `tidal collect-demos` (.npz), or the replay a tidal
run saved with its latest checkpoint (a run folder or a checkpoint file: D4RL's "replay" datasets are made this
way).

Every source gives the same columns (`obs`, `action`, `reward`, `next_obs`, `terminated`, `truncated`), with
actions in the policy's units, and the reference returns of a random and an expert policy where the dataset
carries them (Minari's `ref_min_score` and `ref_max_score`), for D4RL's normalised score.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.base.errors import CheckpointError, ConfigError
from tidal.base.nest import leading_dim
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.demos import Demos, check_demos, load_demos

FIELDS = ('obs', 'action', 'reward', 'next_obs', 'terminated', 'truncated')
DATA_KEY = 'policy.collect.data_path'


@dataclass
class OfflineDataset:
    """Transitions of a fixed dataset, and what is known of its scores."""

    columns: dict[str, Any]                      # FIELDS, leading dim = transitions, on the CPU
    source: str                                  # where it came from, for messages
    ref_scores: Optional[tuple[float, float]]    # (random, expert) episode returns, or None

    @property
    def size(self) -> int:
        return leading_dim(self.columns['reward'])


def load_offline_dataset(cfg: EasyDict) -> OfflineDataset:
    """The dataset `policy.collect.data_path` names, checked against the run's env and spaces."""
    path = cfg.policy.collect.data_path
    if not path:
        raise ConfigError(f"policy '{cfg.policy.type}' learns offline: set {DATA_KEY} to a Minari dataset id or "
                          f"folder, a demonstration file (.npz) or a tidal run folder whose replay it learns from")
    source = Path(path).expanduser()
    if source.is_file() and source.suffix == '.pt' or (source / 'ckpt' / 'latest.pt').is_file():
        return _from_replay(source, cfg)
    return _from_demos(read_demos(str(path), DATA_KEY, cfg), str(path), cfg)


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
