"""The dataset an offline run learns from, as transition columns: a Minari dataset (an id under Minari's root, or
a folder), a demonstration file of `tidal collect-demos` (.npz), or the replay a tidal run saved with its latest
checkpoint (a run folder or a checkpoint file: D4RL's "replay" datasets are made this way).

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
    if source.suffix == '.npz' or source.is_file():
        demos = load_demos(source)
        check_demos(demos, cfg.env.env_id, cfg.policy.model.obs_shape, cfg.policy.model.action_shape, source)
        return _from_demos(demos, str(path), cfg)
    if importlib.util.find_spec('minari') is None:
        raise ConfigError(f"{DATA_KEY}: '{path}' is not a file or a run folder, and reading it as a Minari dataset "
                          f'needs the minari package: pip install -e ".[minari]"')
    from tidal.worker.minari_datasets import load_minari_demos
    return _from_demos(load_minari_demos(str(path), DATA_KEY, cfg.env), str(path), cfg)


def _from_demos(demos: Demos, source: str, cfg: EasyDict) -> OfflineDataset:
    meta = demos.metadata
    dataset = ('ref_min_score' in meta and 'ref_max_score' in meta) and (meta['ref_min_score'], meta['ref_max_score'])
    return OfflineDataset({field: demos.columns[field] for field in FIELDS}, source,
                          reference_scores(cfg, dataset or None, source))


def _from_replay(source: Path, cfg: EasyDict) -> OfflineDataset:
    """The replay buffer saved in a run's latest checkpoint (or in the checkpoint file `source`)."""
    path = source if source.is_file() else source / 'ckpt' / 'latest.pt'
    state = load_checkpoint(path)
    columns = state.get('feed', {}).get('buffer', {}).get('columns') if isinstance(state.get('feed'), dict) else None
    if not isinstance(columns, dict) or any(field not in columns for field in FIELDS):
        raise CheckpointError(f"{DATA_KEY}: checkpoint '{path}' holds no replay of transitions (a run of an off-policy "
                              f"policy saves one); its feed kept {sorted(state.get('feed', {}))}")
    config = path.parent.parent / 'config.yaml'
    if config.is_file():
        _check_replay_env(config, cfg, path)
    return OfflineDataset({field: columns[field] for field in FIELDS}, str(source), reference_scores(cfg, None, str(source)))


def _check_replay_env(config: Path, cfg: EasyDict, path: Path) -> None:
    """Refuse the replay of a run on another env."""
    from tidal.config import read_config  # the config package reads files; only a replay source needs it here
    main_config, _ = read_config(str(config))
    env_id = main_config.get('env', {}).get('env_id')
    if env_id != cfg.env.env_id:
        raise CheckpointError(f"{DATA_KEY}: the replay in '{path}' comes from a run on env '{env_id}', but env.env_id "
                              f"is '{cfg.env.env_id}'")


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
    """Columns as tensors: rewards as float32, the flags as bool (a replay may store them otherwise)."""
    out = {field: torch.as_tensor(columns[field]) for field in FIELDS}
    out['reward'] = out['reward'].float()
    out['terminated'], out['truncated'] = out['terminated'].bool(), out['truncated'].bool()
    return out
