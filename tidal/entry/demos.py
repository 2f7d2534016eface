"""Recording expert demonstrations with a trained policy (`tidal collect-demos`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from tidal.base.errors import ConfigError
from tidal.entry.setup import ConfigInput, load_config
from tidal.worker.builders import build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_policy_checkpoint
from tidal.worker.demos import save_demos
from tidal.worker.expert_demos import record_episodes


def collect_demos(input_cfg: ConfigInput, ckpt: str | os.PathLike, episodes: int, out: str | os.PathLike,
                  deterministic: bool = True, seed: Optional[int] = None, overrides: Iterable[str] = ()) -> Path:
    """Roll the policy in `ckpt` out for `episodes` episodes and save them as one demonstration file.

    Deterministic by default (the eval-mode action); `deterministic=False` samples like the collector.
    """
    if episodes < 1:
        raise ConfigError(f'--episodes must be >= 1, got {episodes}')
    cfg = load_config(input_cfg, seed, overrides)
    seed = cfg.seed  # the given seed, else the config's
    configure_torch(cfg)
    set_seed(seed)
    policy = build_policy(cfg, enable_field=('collect', 'eval'))
    load_policy_checkpoint(policy, ckpt)
    rollouts, metadata = record_episodes(cfg, policy, episodes, seed, deterministic)
    return save_demos(out, rollouts, dict(metadata, policy=cfg.policy.type, checkpoint=str(ckpt)))
