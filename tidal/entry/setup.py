"""Building the parts of a run from a compiled config; shared by every pipeline."""
from __future__ import annotations

import os
import random
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

import numpy as np
import torch
from easydict import EasyDict

from tidal.config import compile_config, resolve_config_source, save_config
from tidal.envs.env_manager import EnvManager, make_env_manager
from tidal.errors import ConfigError, TidalError
from tidal.policies.base import Policy, resolve_device
from tidal.registry import ENV_REGISTRY, policy_class
from tidal.worker.collector import SampleCollector
from tidal.worker.logger import write_summary

ConfigInput = Union[str, os.PathLike, tuple]

EVALUATOR_SEED_OFFSET = 10_000  # evaluator envs draw from other seeds than the collector's


def load_config(input_cfg: ConfigInput, seed: Optional[int] = None, overrides: Iterable[str] = ()) -> EasyDict:
    """Compile a config given as a file path, a zoo name or a (main_config, create_config) pair;
    `seed` wins over the config's seed, which wins over 0."""
    if isinstance(input_cfg, (tuple, list)):
        main_config, create_config = input_cfg
    else:
        main_config, create_config = resolve_config_source(str(input_cfg))
    return compile_config(main_config, create_config, seed=seed, overrides=overrides)


def configure_torch(cfg: EasyDict) -> None:
    """The process-wide torch settings of a run: CPU threads and subnormal flushing."""
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    torch.set_flush_denormal(cfg.flush_denormal)


def set_seed(seed: int) -> None:
    """Seed Python, numpy and torch so that a run on CPU repeats exactly."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def new_run_dir(exp_name: str) -> Path:
    """`exp_name`, or `exp_name_<timestamp>` if that folder already holds a run (never overwrite one)."""
    run_dir = Path(exp_name)
    if run_dir.exists() and any(run_dir.iterdir()):
        run_dir = Path(f"{exp_name}_{time.strftime('%y%m%d_%H%M%S')}")
    run_dir.mkdir(parents=True, exist_ok=True)
    return run_dir


def build_env_manager(cfg: EasyDict, role: str) -> EnvManager:
    """The collector's or the evaluator's env manager (`role`); their workers seed them on reset."""
    env = ENV_REGISTRY.build(cfg.env.type, cfg.env)
    name = cfg.env.get('env_id') or cfg.env.type
    return make_env_manager(env.make, cfg.env_manager.type, cfg.env[f'{role}_env_num'], name, role)


def build_collector(cfg: EasyDict, policy: Policy) -> SampleCollector:
    """The collector `collector.type` names: envs in this process, or Ray rollout workers."""
    if cfg.collector.type == 'ray':
        from tidal.worker.ray_collector import RayCollector  # Ray is an optional extra
        return RayCollector(cfg, policy)  # type: ignore[return-value]  # the same interface
    return SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)


def build_policy(cfg: EasyDict, enable_field: Iterable[str] = ('learn', 'collect', 'eval')) -> Policy:
    return policy_class(cfg.policy.type, cfg.policy)(cfg.policy, enable_field=enable_field)


def check_budget(cfg: EasyDict, max_env_step: Optional[int], max_train_iter: Optional[int]) -> None:
    if max_env_step is None and max_train_iter is None and cfg.env.stop_value is None:
        raise ConfigError('nothing would end this run: give max_env_step (--max-env-step), '
                          'max_train_iter or env.stop_value')


def start_run(feed_factory: Callable[..., Any], cfg: EasyDict, max_env_step: Optional[int],
              max_train_iter: Optional[int], progress: bool) -> Policy:
    """Make the run folder, save the resolved config in it and train the run shell with `feed_factory`.

    If the run cannot be built (a bad config value found by a policy, an env that fails to start),
    the folder, new or empty before, is removed again rather than left half-written. Under torchrun
    only rank 0 makes and writes the folder; the other ranks learn its path from rank 0.
    """
    from tidal.entry.run import Run  # the shell builds on this module
    from tidal.worker.distributed import broadcast_object, init_distributed
    context = init_distributed(resolve_device(cfg.policy.device, cfg.policy.get('cuda', False)))
    made: Union[Path, TidalError, None] = None
    if context.is_main:
        try:
            made = _new_run_folder(cfg, max_env_step, max_train_iter)
        except TidalError as err:
            made = err
    made = broadcast_object(context, made)  # every rank stops on rank 0's error, or runs in its folder
    if isinstance(made, TidalError):
        raise made
    run_dir = made
    try:
        run = Run(cfg, run_dir, feed_factory, max_env_step, max_train_iter, progress)
    except OSError as err:
        if context.is_main:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise TidalError(f"cannot write the run folder '{run_dir}': {err.strerror or err}") from err
    except BaseException:
        if context.is_main:
            shutil.rmtree(run_dir, ignore_errors=True)
        raise
    return run.train()


def _new_run_folder(cfg: EasyDict, max_env_step: Optional[int], max_train_iter: Optional[int]) -> Path:
    try:
        run_dir = new_run_dir(cfg.exp_name)
    except OSError as err:
        raise TidalError(f"cannot create the run folder '{cfg.exp_name}' (exp_name): {err.strerror or err}") from err
    try:
        # the config and the budget come first: a run killed before its first checkpoint can start again
        save_config(cfg, run_dir / 'config.yaml')
        write_summary(run_dir, {'outcome': 'starting', 'max_env_step': max_env_step, 'max_train_iter': max_train_iter})
    except OSError as err:
        shutil.rmtree(run_dir, ignore_errors=True)
        raise TidalError(f"cannot write the run folder '{run_dir}': {err.strerror or err}") from err
    return run_dir
