"""Evaluating a saved policy outside of training."""
from __future__ import annotations

import os
from typing import Optional

from tidal.entry.setup import ConfigInput, load_config
from tidal.worker.builders import EVALUATOR_SEED_OFFSET, build_env_manager, build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_checkpoint, load_policy_weights, policy_state
from tidal.worker.evaluator import EvalResult, Evaluator


def evaluate_checkpoint(input_cfg: ConfigInput, ckpt: str | os.PathLike, episodes: Optional[int] = None,
                        seed: Optional[int] = None) -> EvalResult:
    """Run `episodes` episodes of the eval mode (`policy.eval.deterministic`) of the policy stored in `ckpt`."""
    cfg = load_config(input_cfg, seed)
    seed = cfg.seed  # the given seed, else the config's
    configure_torch(cfg)
    set_seed(seed)
    policy = build_policy(cfg, enable_field=('eval',))
    load_policy_weights(policy, policy_state(load_checkpoint(ckpt, map_location=policy.device), ckpt), ckpt)
    manager = build_env_manager(cfg, 'evaluator')
    evaluator = Evaluator(manager, policy.eval_mode, policy.device,
                          n_episode=episodes or cfg.env.n_evaluator_episode, eval_freq=1,
                          seed=seed + EVALUATOR_SEED_OFFSET)
    try:
        return evaluator.eval()
    finally:
        manager.close()
