"""Recording expert demonstrations with a trained policy (`tidal collect-demos`)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from tidal.base.errors import ConfigError
from tidal.entry.setup import ConfigInput, load_config
from tidal.worker.builders import build_env_manager, build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_checkpoint, load_policy_weights, policy_state
from tidal.worker.collector import EpisodeCollector
from tidal.worker.demos import deterministic_mode, save_demos
from tidal.worker.rng import stream_seed


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
    load_policy_weights(policy, policy_state(load_checkpoint(ckpt, map_location=policy.device), ckpt), ckpt)
    acting = deterministic_mode(policy.collect_mode, policy.eval_mode) if deterministic else policy.collect_mode
    manager = build_env_manager(cfg, 'collector')
    try:
        collector = EpisodeCollector(manager, acting, policy.device)
        collector.reset(seed=stream_seed(seed))
        rollouts = collector.collect(episodes)
    finally:
        manager.close()
    returns = [float(episode['reward'].sum()) for episode in rollouts]
    metadata = dict(
        env_id=cfg.env.env_id, env_kwargs=dict(cfg.env.env_kwargs),
        observation_space=str(manager.observation_space), action_space=str(manager.action_space),
        obs_shape=cfg.policy.model.obs_shape, action_shape=cfg.policy.model.action_shape,
        policy=cfg.policy.type, checkpoint=str(ckpt), deterministic=deterministic, seed=seed, returns=returns)
    return save_demos(out, rollouts, metadata)
