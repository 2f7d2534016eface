"""The collector a config names (`collector.type`): envs in this process, or Ray rollout workers.

Apart from `builders`, because the Ray workers build their own policies and envs with those builders.
"""
from __future__ import annotations

import copy
from typing import Callable, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.policy import PolicyLike
from tidal.registry import feed_class
from tidal.worker.builders import build_env_manager, build_policy
from tidal.worker.collector import SampleCollector
from tidal.worker.copy_acting import CopyActingCollector
from tidal.worker.no_collection import NoCollection


def build_collector(cfg: EasyDict, policy: PolicyLike, notify: Optional[Callable[[str], None]] = None) -> Collector:
    """Local envs stepped by `policy`'s collect mode (or its CPU copy: `policy.collect.acting_device`), or
    `collector.num_workers` Ray workers acting with it, which tell `notify` of a restarted worker; no envs at all
    for a feed that learns offline."""
    spec = feed_class(type(policy)).spec(cfg)
    if spec.offline:
        return NoCollection()
    if cfg.collector.type == 'ray':
        from tidal.worker.ray_collector import build_ray_collector  # Ray is an optional extra
        ahead = spec.rollout_ahead
        return build_ray_collector(cfg, policy.collect_mode, policy.device, rollout_ahead=ahead, notify=notify)
    manager = build_env_manager(cfg, 'collector')
    if cfg.policy.collect.acting_device == 'cpu':
        return CopyActingCollector(manager, policy, cpu_copy(cfg))
    return SampleCollector(manager, policy.collect_mode, policy.device)


def cpu_copy(cfg: EasyDict) -> PolicyLike:
    """The collect mode of the config's policy, on the CPU."""
    on_cpu = EasyDict(copy.deepcopy(cfg))
    on_cpu.policy.device, on_cpu.policy.cuda = 'cpu', False
    with torch.random.fork_rng(devices=[]):  # its initial weights are replaced: it draws nothing of the run's
        return build_policy(on_cpu, enable_field=('collect', ))
