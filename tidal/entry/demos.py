"""Recording expert demonstrations with a trained policy (`tidal collect-demos`)."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Iterable, Optional

from tidal.base.errors import ConfigError
from tidal.entry.setup import ConfigInput, load_config
from tidal.worker.builders import build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_policy_checkpoint
from tidal.worker.demos import save_demos
from tidal.worker.expert_demos import record_episodes, returns_summary
from tidal.worker.run_groups import checkpoint_file


def collect_demos(input_cfg: ConfigInput, ckpt: str | os.PathLike, episodes: int,
                  out: Optional[str | os.PathLike] = None, deterministic: bool = True, seed: Optional[int] = None,
                  overrides: Iterable[str] = (), data_format: str = 'npz', dataset_id: Optional[str] = None) -> Path:
    """Roll the policy in `ckpt` (a checkpoint file, or a run folder: its ckpt/best.pt, else ckpt/latest.pt) out for
    `episodes` episodes and save them as one demonstration file (`out`, format 'npz'), or as the Minari dataset
    `dataset_id` (format 'minari', one env under Minari's DataCollector); their returns are printed in one line.

    Deterministic by default (the eval-mode action); `deterministic=False` samples like the collector.
    """
    if episodes < 1:
        raise ConfigError(f'--episodes must be >= 1, got {episodes}')
    _check_destination(data_format, out, dataset_id)
    ckpt = checkpoint_file(ckpt, 'collect-demos')
    cfg = load_config(input_cfg, seed, overrides)
    seed = cfg.seed  # the given seed, else the config's
    configure_torch(cfg)
    set_seed(seed)
    policy = build_policy(cfg, enable_field=('collect', 'eval'))
    load_policy_checkpoint(policy, ckpt)
    made_by = dict(policy=cfg.policy.type, checkpoint=str(ckpt))
    if data_format == 'minari':
        assert dataset_id is not None
        from tidal.worker.minari_datasets import MinariWriter
        writer = MinariWriter(cfg, dataset_id)
        try:
            _, metadata = record_episodes(cfg, policy, episodes, seed, deterministic, manager=writer.manager)
            path = writer.save(dict(metadata, **made_by))
        finally:
            writer.close()
    else:
        assert out is not None
        rollouts, metadata = record_episodes(cfg, policy, episodes, seed, deterministic)
        path = save_demos(out, rollouts, dict(metadata, **made_by))
    print(f"tidal: recorded {episodes} episodes with '{ckpt}', {returns_summary(metadata['returns'])}", flush=True)
    return path


def _check_destination(data_format: str, out: Optional[str | os.PathLike], dataset_id: Optional[str]) -> None:
    """-o for a demonstration file, --dataset-id for a Minari dataset, each with its own format only."""
    if data_format == 'minari':
        if importlib.util.find_spec('minari') is None:
            raise ConfigError('--format minari needs the minari package: pip install -e ".[minari]"')
        if not dataset_id or out is not None:
            raise ConfigError('--format minari writes the dataset --dataset-id (namespace/env/name-vN) under '
                              "Minari's root (MINARI_DATASETS_PATH): give --dataset-id, not -o")
    elif data_format == 'npz':
        if out is None or dataset_id is not None:
            raise ConfigError('--format npz writes the demonstration file -o FILE: give -o (--dataset-id is for '
                              '--format minari)')
    else:
        raise ConfigError(f"--format must be 'npz' or 'minari', got {data_format!r}")
