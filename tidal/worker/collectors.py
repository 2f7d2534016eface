"""The collector a config names (`collector.type`): envs in this process, or Ray rollout workers.

Apart from `builders`, because the Ray workers build their own policies and envs with those builders.
"""
from __future__ import annotations

from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.policies.base import Policy
from tidal.registry import feed_class
from tidal.worker.builders import build_env_manager
from tidal.worker.collector import SampleCollector


def build_collector(cfg: EasyDict, policy: Policy) -> Collector:
    """Local envs stepped by `policy`'s collect mode, or `collector.num_workers` Ray workers acting with it."""
    if cfg.collector.type == 'ray':
        from tidal.worker.ray_collector import RayCollector  # Ray is an optional extra
        ahead = feed_class(type(policy)).spec(cfg).rollout_ahead
        return RayCollector(cfg, policy.collect_mode, policy.device, rollout_ahead=ahead)
    return SampleCollector(build_env_manager(cfg, 'collector'), policy.collect_mode, policy.device)
