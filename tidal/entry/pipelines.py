"""Choosing the data feed a policy needs, for `tidal train` and `tidal resume`."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Iterable, Optional

from easydict import EasyDict

from tidal.config import read_config
from tidal.entry.ppg_feed import AuxPhaseFeed
from tidal.entry.replay_feed import ReplayFeed
from tidal.entry.rollout_feed import RolloutFeed
from tidal.entry.run import FeedFactory, Run
from tidal.entry.setup import ConfigInput, load_config, start_run
from tidal.entry.sqil_pipeline import SQILFeed
from tidal.entry.unroll_feed import UnrollFeed
from tidal.errors import CheckpointError, TidalError
from tidal.policies.base import Policy
from tidal.registry import policy_class
from tidal.worker.checkpoint import load_checkpoint

FEEDS: dict[str, FeedFactory] = {'off_policy': ReplayFeed, 'sqil': SQILFeed, 'on_policy': RolloutFeed,
                                 'ppg': AuxPhaseFeed, 'unroll': UnrollFeed}
ON_POLICY = ('on_policy', 'ppg')  # the pipelines that learn from fresh rollouts only


def pipeline_name(cfg: EasyDict) -> str:
    return getattr(policy_class(cfg.policy.type, cfg.policy), 'pipeline', 'off_policy')


def feed_factory(cfg: EasyDict) -> FeedFactory:
    """The data feed named by the policy's `pipeline` attribute."""
    name = pipeline_name(cfg)
    if name not in FEEDS:
        raise TidalError(f"policy '{cfg.policy.type}' asks for pipeline '{name}', which tidal does not have "
                         f"(known: {', '.join(FEEDS)})")
    return FEEDS[name]


def train(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
          max_train_iter: Optional[int] = None, overrides: Iterable[str] = (), progress: bool = True) -> Policy:
    """Train any registered policy with the data feed it needs."""
    cfg = load_config(input_cfg, seed, overrides)
    return start_run(feed_factory(cfg), cfg, max_env_step, max_train_iter, progress)


def resume(run_dir: str | os.PathLike, progress: bool = True) -> Optional[Policy]:
    """Continue a run from its folder: its saved config and its latest checkpoint.

    A run that already ended (its budget or stop value reached) is left as it is: None is returned.
    """
    run_dir = Path(run_dir)
    config_path = run_dir / 'config.yaml'
    if not run_dir.is_dir():
        raise TidalError(f"run folder '{run_dir}' does not exist (a run stopped before it made its folder "
                         f"has nothing to resume: start it with tidal train)")
    if not config_path.is_file():
        raise TidalError(f"'{run_dir}' is not a tidal run folder (it has no config.yaml)")
    main_config, create_config = read_config(str(config_path))
    cfg = load_config((main_config, create_config))  # the saved config holds the run's seed
    latest = run_dir / 'ckpt' / 'latest.pt'
    if not latest.is_file():
        return _start_again(cfg, run_dir, progress)
    state = load_checkpoint(latest)
    if state.get('finished'):
        print(f"tidal: run '{run_dir}' already ended ({state['finished']}); nothing to resume", flush=True)
        return None
    run = Run(cfg, run_dir, feed_factory(cfg), state['max_env_step'], state['max_train_iter'], progress,
              resume_state=state)
    return run.train()


def _start_again(cfg: EasyDict, run_dir: Path, progress: bool) -> Policy:
    """A run killed while it started, before its first checkpoint: run it again from the beginning,
    which with the same config and seed is the run it would have been."""
    try:
        budget = json.loads((run_dir / 'summary.json').read_text())
        max_env_step, max_train_iter = budget['max_env_step'], budget['max_train_iter']
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise CheckpointError(f"run '{run_dir}' has no checkpoint and no budget in its summary.json; start it "
                              f"again with tidal train {run_dir / 'config.yaml'}") from err
    print(f"tidal: run '{run_dir}' stopped before its first checkpoint; it starts again from the beginning",
          flush=True)
    for partial in ('log.txt', 'evals.csv', 'curve.png'):
        (run_dir / partial).unlink(missing_ok=True)
    shutil.rmtree(run_dir / 'log', ignore_errors=True)
    shutil.rmtree(run_dir / 'ckpt', ignore_errors=True)
    return Run(cfg, run_dir, feed_factory(cfg), max_env_step, max_train_iter, progress).train()
