"""A rollout worker for Ray: its own vector env and copy of the policy's collect mode, in its own process.

The class is plain Python; `RayCollector` turns it into a Ray actor. Everything it returns is numpy
arrays and Python scalars, which Ray's object store moves without pickling torch objects.
"""
from __future__ import annotations

import sys
import time
import uuid
from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.config.compiler import BUILTIN_MODULES
from tidal.registry import import_names
from tidal.worker.collector import SampleCollector, steps_per_env
from tidal.worker.ray_cluster import by_module_names
from tidal.base.nest import to_numpy, tree_map


def prepare_worker_process(cfg: dict, import_path: list[str]) -> EasyDict:
    """Make a Ray actor's process ready to build the run's parts: the driver's import path (a user's policy or
    env), the modules the config imports (by name, `by_module_names`), one torch thread; the run config comes
    back with the policy on the CPU, whatever device the learner uses (`policy.device='cuda'` keeps its workers
    on the CPU)."""
    for path in reversed(import_path):
        if path not in sys.path:
            sys.path.insert(0, path)
    run_cfg = EasyDict(cfg)
    run_cfg.policy.device, run_cfg.policy.cuda = 'cpu', False  # (`cuda` is the legacy flag of DI-engine configs)
    by_module_names(run_cfg)
    torch.set_num_threads(1)
    import_names(BUILTIN_MODULES)
    import_names(run_cfg.import_names)
    import_names(run_cfg.env.import_names)
    import_names(run_cfg.policy.import_names)
    return run_cfg


class RolloutWorker:
    """Envs `first_env` .. `first_env + num_envs - 1` of the run's collector, numbered as the local
    collector numbers them, so that their seeds are the same."""

    def __init__(self, cfg: dict, index: int, first_env: int, num_envs: int, import_path: list[str]) -> None:
        run_cfg = prepare_worker_process(cfg, import_path)
        from tidal.worker.builders import build_env_manager, build_policy  # after the path: it imports user modules

        self.index, self.first_env, self.num_envs = index, first_env, num_envs
        self.incarnation = uuid.uuid4().hex
        self.policy = build_policy(run_cfg, enable_field=('collect',))
        manager = build_env_manager(run_cfg, 'collector', num_envs, label=f'Ray worker {index} collector')
        self.collector = SampleCollector(manager, self.policy.collect_mode, torch.device('cpu'))

    def ping(self) -> str:
        """The worker is up (Ray has placed and built it): the id of this process's worker, new at each restart,
        so that a restarted worker can be told from the one it replaces."""
        return self.incarnation

    def reset(self, seed: int) -> None:
        """New episodes; env i of the run's collector is seeded with `seed + i`, as the local collector does."""
        self.collector.reset(seed=seed + self.first_env)

    def state_dict(self) -> dict[str, Any]:
        """Where this worker's envs and acting stream stand, for an exact resume of a 'sync' run."""
        return self.collector.state_dict()

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        """Continue the saved episodes; where they cannot be, new ones from `fallback_seed` (and the reason)."""
        return self.collector.load_state_dict(state, fallback_seed + self.first_env)

    def collect(self, weights: Optional[dict[str, Any]], n_sample: int, random: bool) -> dict[str, Any]:
        """`n_sample` env steps (rounded up to whole steps of every env) with `weights`, as numpy columns."""
        if weights is not None:
            self.policy.load_weights(weights)
        start = time.perf_counter()
        sample = self.collector.collect(n_sample, random=random)
        episodes = self.collector.episodes.pop()
        return {
            'sample': tree_map(to_numpy, sample),
            'steps': steps_per_env(n_sample, self.num_envs),
            'episode_returns': episodes.returns, 'episode_lengths': episodes.lengths,
            'statistics': {name: stats.state_dict() for name, stats in self.policy.running_statistics().items()},
            'seconds': time.perf_counter() - start,
        }
