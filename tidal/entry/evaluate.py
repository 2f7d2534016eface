"""Evaluating a saved policy outside of training."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Optional

from tidal.entry.setup import ConfigInput, load_config
from tidal.envs.video import resolve_video_format
from tidal.worker.builders import EVALUATOR_SEED_OFFSET, build_env_manager, build_policy, configure_torch, set_seed
from tidal.worker.checkpoint import load_policy_checkpoint
from tidal.worker.evaluator import EvalResult, Evaluator
from tidal.worker.run_groups import checkpoint_file


def evaluate_checkpoint(input_cfg: ConfigInput, ckpt: str | os.PathLike, episodes: Optional[int] = None,
                        seed: Optional[int] = None, video_dir: Optional[str | os.PathLike] = None,
                        video_format: Optional[str] = None) -> EvalResult:
    """Run `episodes` episodes of the eval mode (`policy.eval.deterministic`) of the policy stored in `ckpt`
    (a checkpoint file, or a run folder: its ckpt/best.pt, else ckpt/latest.pt).

    `video_dir`: record every episode into `<video_dir>/<exp_name>-episode-<n>.<video_format>`, numbered env by
    env; MP4 unless `video_format` says 'gif' (GIF, said in one line, where no MP4 encoder is installed). The
    recorded episodes are the evaluated ones: same seeds, same returns."""
    ckpt = checkpoint_file(ckpt, 'eval')
    cfg = load_config(input_cfg, seed)
    seed = cfg.seed  # the given seed, else the config's
    configure_torch(cfg)
    set_seed(seed)
    n_episode = episodes or cfg.env.n_evaluator_episode
    videos: list[Path] = []
    if video_dir is not None:
        suffix, fallback = resolve_video_format(video_format)
        if fallback:
            print(f'tidal: {fallback}', file=sys.stderr, flush=True)
        prefix = Path(cfg.exp_name).name or 'eval'
        videos = [Path(video_dir) / f'{prefix}-episode-{n}.{suffix}' for n in range(n_episode)]
    manager = build_env_manager(cfg, 'evaluator', render=video_dir is not None)  # an env that cannot render fails here
    try:
        policy = build_policy(cfg, enable_field=('eval',))
        load_policy_checkpoint(policy, ckpt)
        evaluator = Evaluator(manager, policy.eval_mode, policy.device, n_episode=n_episode, eval_freq=1,
                              seed=seed + EVALUATOR_SEED_OFFSET)
        return evaluator.eval(record=videos)
    finally:
        manager.close()
