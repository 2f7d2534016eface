"""The serial entry points, one per kind of data feed, as DI-engine names them. Each refuses a policy whose
feed another entry point trains (`FeedSpec.entry_point`), naming that one; `tidal train` picks it itself.

Each returns a `RunResult` (with `seeds`, a `GroupResult` of them): the trained policy, the run folder and its
eval history; it also answers for the policy (`result.eval_mode`), as the Policy these entry points once
returned did."""
from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from tidal.entry.pipelines import train
from tidal.entry.setup import ConfigInput


def serial_pipeline(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                    max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                    progress: bool = True, seeds: Optional[Sequence[int]] = None) -> Any:
    """Train an off-policy algorithm from a config path, zoo name or (main, create) pair.

    `seed` overrides the config's `seed` key; without either the run uses seed 0. `seeds=[0, 1, ...]` trains
    those seeds as a seed group and returns a `GroupResult` (every entry point below takes it too).
    """
    return train(input_cfg, seed, max_env_step, max_train_iter, overrides, progress, entry_point='serial_pipeline',
                 seeds=seeds)


def serial_pipeline_onpolicy(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                             max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                             progress: bool = True, seeds: Optional[Sequence[int]] = None) -> Any:
    """Train an on-policy algorithm (PPO, PPG) from a config path, zoo name or (main, create) pair.

    Each step collects `policy.collect.n_sample` env steps and learns from them for
    `policy.learn.epoch_per_collect` epochs (PPG adds its auxiliary phases); then they are dropped.
    """
    return train(input_cfg, seed, max_env_step, max_train_iter, overrides, progress,
                 entry_point='serial_pipeline_onpolicy', seeds=seeds)


def serial_pipeline_sqil(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                         max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                         progress: bool = True, seeds: Optional[Sequence[int]] = None) -> Any:
    """Train a demonstration-driven policy (e.g. 'sqil_sac') from a config path, zoo name or pair."""
    return train(input_cfg, seed, max_env_step, max_train_iter, overrides, progress,
                 entry_point='serial_pipeline_sqil', seeds=seeds)


def serial_pipeline_offline(input_cfg: ConfigInput, seed: Optional[int] = None, max_train_iter: Optional[int] = None,
                            overrides: Iterable[str] = (), progress: bool = True,
                            seeds: Optional[Sequence[int]] = None) -> Any:
    """Train an offline policy ('bc', 'td3_bc', 'iql', 'cql') on its dataset (`policy.collect.data_path`) from a
    config path, zoo name or pair, for `max_train_iter` updates; no env is stepped but the evaluator's."""
    return train(input_cfg, seed, None, max_train_iter, overrides, progress, entry_point='serial_pipeline_offline',
                 seeds=seeds)


def serial_pipeline_muzero(input_cfg: ConfigInput, seed: Optional[int] = None, max_env_step: Optional[int] = None,
                           max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                           progress: bool = True, seeds: Optional[Sequence[int]] = None) -> Any:
    """Train MuZero from a config path, zoo name or (main, create) pair.

    Each step collects `policy.collect.n_sample` env steps into a trajectory buffer and makes
    `policy.learn.update_per_collect` updates, each unrolling the model from `policy.learn.batch_size`
    sampled starts.
    """
    return train(input_cfg, seed, max_env_step, max_train_iter, overrides, progress,
                 entry_point='serial_pipeline_muzero', seeds=seeds)
