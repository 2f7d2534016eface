"""Building a run's parts from a compiled config, in one place: train, eval, collect-demos and the Ray
workers all build their policy and env managers here (the collector: `tidal.worker.collectors`)."""
from __future__ import annotations

import functools
import random
from typing import Iterable, Optional

import numpy as np
import torch
from easydict import EasyDict

from tidal.base.errors import EnvError
from tidal.base.policy import PolicyLike
from tidal.envs.env_manager import EnvManager, make_env_manager
from tidal.envs.gym_env import EnvRole, GymEnv
from tidal.envs.video import check_recordable
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, policy_class

EVALUATOR_SEED_OFFSET = 10_000  # evaluator envs draw from other seeds than the collector's


def configure_torch(cfg: EasyDict) -> None:
    """The process-wide torch settings of a run: CPU threads, subnormal flushing and TF32 on CUDA."""
    if cfg.torch_threads > 0:
        torch.set_num_threads(cfg.torch_threads)
    torch.set_flush_denormal(cfg.flush_denormal)
    set_tf32(cfg.get('tf32', False))


def set_tf32(enabled: bool) -> None:
    """TF32 for CUDA matmuls and cuDNN convolutions alike (`tf32`): both on, or both full float32."""
    if not hasattr(torch.backends.cuda.matmul, 'fp32_precision'):  # PyTorch before 2.9
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = enabled
        return
    precision = 'tf32' if enabled else 'ieee'
    torch.backends.cuda.matmul.fp32_precision = precision
    getattr(torch.backends.cudnn, 'conv').fp32_precision = precision  # not in torch's type stubs


def set_seed(seed: int) -> None:
    """Seed Python, numpy and torch so that a run on CPU repeats exactly."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def build_policy(cfg: EasyDict, enable_field: Iterable[str] = ('learn', 'collect', 'eval')) -> PolicyLike:
    """The policy `policy.type` names (its registered class), on the device `policy.device` resolves to."""
    policy: PolicyLike = policy_class(cfg.policy.type, cfg.policy)(cfg.policy, enable_field=enable_field)
    return policy


def build_env_manager(cfg: EasyDict, role: EnvRole, num_envs: Optional[int] = None,
                      label: Optional[str] = None, render: bool = False) -> EnvManager:
    """The env manager of `role` ('collector' or 'evaluator': `env.<role>_env_num` envs unless `num_envs`),
    whose envs the env type makes for that role (`make(role)`); `label` names it in errors. Its users seed it
    on reset. `render`: envs that can record episodes (`EnvManager.plan_videos`), checked before anything runs."""
    env = ENV_REGISTRY.build(cfg.env.type, cfg.env)
    name = cfg.env.get('env_id') or cfg.env.type
    count = cfg.env[f'{role}_env_num'] if num_envs is None else num_envs
    make = functools.partial(env.make, role)
    if render:
        make = functools.partial(env.make, role, render=True)
        _check_recordable(cfg, env, name, make)
    return make_env_manager(make, cfg.env_manager.type, count, name, label or role, env_cfg=cfg.env)


def _check_recordable(cfg: EasyDict, env: object, name: str, make: functools.partial) -> None:
    if not isinstance(env, GymEnv):
        raise EnvError(f"env '{name}' cannot be recorded: its env type '{cfg.env.type}' makes no rendering envs "
                       f"(an env type records videos by subclassing tidal.envs.GymEnv)")
    if not ENV_MANAGER_REGISTRY.get(cfg.env_manager.type).steps_own_envs:
        raise EnvError(f"env '{name}' cannot be recorded under env_manager.type '{cfg.env_manager.type}': "
                       f"use 'base' or 'subprocess'")
    check_recordable(make, name)
