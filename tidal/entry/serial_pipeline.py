"""The serial entry points: the run shell driving a replay feed (off-policy), a rollout feed (on-policy) or
an unroll feed (MuZero)."""
from __future__ import annotations

from typing import Iterable, Optional

from tidal.entry.pipelines import ON_POLICY, feed_factory, pipeline_name
from tidal.entry.replay_feed import ReplayFeed
from tidal.entry.setup import ConfigInput, load_config, start_run
from tidal.entry.unroll_feed import UnrollFeed
from tidal.errors import ConfigError
from tidal.policies.base import Policy


#: pipeline -> (what the policy does, the entry point that trains it), for the error of a wrong entry point
ENTRY_OF = {'on_policy': ('learns on-policy', 'serial_pipeline_onpolicy'),
            'ppg': ('learns on-policy', 'serial_pipeline_onpolicy'),
            'sqil': ('learns from demonstrations', 'serial_pipeline_sqil'),
            'unroll': ('learns from unrolled trajectories', 'serial_pipeline_muzero')}


def serial_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                    max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                    progress: bool = True) -> Policy:
    """Train an off-policy algorithm from a config path, zoo name or (main, create) pair.

    `seed` overrides the config's `seed` key; without either the run uses seed 0.
    """
    cfg = load_config(input_cfg, seed, overrides)
    name = pipeline_name(cfg)
    if name != 'off_policy':
        raise ConfigError(f"policy '{cfg.policy.type}' {ENTRY_OF[name][0]}; train it with {ENTRY_OF[name][1]} "
                          f"(or tidal train, which picks the pipeline itself)")
    return start_run(ReplayFeed, cfg, max_env_step, max_train_iter, progress)


def serial_pipeline_onpolicy(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                             max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                             progress: bool = True) -> Policy:
    """Train an on-policy algorithm (PPO, PPG) from a config path, zoo name or (main, create) pair.

    Each step collects `policy.collect.n_sample` env steps and learns from them for
    `policy.learn.epoch_per_collect` epochs (PPG adds its auxiliary phases); then they are dropped.
    """
    cfg = load_config(input_cfg, seed, overrides)
    if pipeline_name(cfg) not in ON_POLICY:
        raise ConfigError(f"policy '{cfg.policy.type}' learns off-policy; train it with serial_pipeline "
                          f"(or tidal train, which picks the pipeline itself)")
    return start_run(feed_factory(cfg), cfg, max_env_step, max_train_iter, progress)


def serial_pipeline_muzero(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                           max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                           progress: bool = True) -> Policy:
    """Train MuZero from a config path, zoo name or (main, create) pair.

    Each step collects `policy.collect.n_sample` env steps into a trajectory buffer and makes
    `policy.learn.update_per_collect` updates, each unrolling the model from `policy.learn.batch_size`
    sampled starts.
    """
    cfg = load_config(input_cfg, seed, overrides)
    if pipeline_name(cfg) != 'unroll':
        raise ConfigError(f"policy '{cfg.policy.type}' does not learn from unrolled trajectories; train it with "
                          f"tidal train, which picks its pipeline")
    return start_run(UnrollFeed, cfg, max_env_step, max_train_iter, progress)
