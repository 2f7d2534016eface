"""A rollout worker for Ray: its own vector env and copy of the policy's collect mode, in its own process.

The class is plain Python; `RayCollector` turns it into a Ray actor. Everything it returns is numpy
arrays and Python scalars, which Ray's object store moves without pickling torch objects.
"""
from __future__ import annotations

import sys
import time
from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.config.compiler import BUILTIN_MODULES
from tidal.registry import import_names
from tidal.worker.collector import SampleCollector, steps_per_env
from tidal.base.nest import to_numpy, tree_map


class RolloutWorker:
    """Envs `first_env` .. `first_env + num_envs - 1` of the run's collector, numbered as the local
    collector numbers them, so that their seeds are the same."""

    def __init__(self, cfg: dict, index: int, first_env: int, num_envs: int, import_path: list[str]) -> None:
        for path in reversed(import_path):  # the driver's own modules (a user's policy or env)
            if path not in sys.path:
                sys.path.insert(0, path)
        from tidal.worker.builders import build_env_manager, build_policy  # after the path: it imports user modules

        run_cfg = EasyDict(cfg)
        run_cfg.policy.device = 'cpu'  # workers act on CPU; the learner's device is the driver's
        torch.set_num_threads(1)
        import_names(BUILTIN_MODULES)
        import_names(run_cfg.import_names)
        import_names(run_cfg.env.import_names)
        import_names(run_cfg.policy.import_names)
        self.index, self.first_env, self.num_envs = index, first_env, num_envs
        self.policy = build_policy(run_cfg, enable_field=('collect',))
        manager = build_env_manager(run_cfg, 'collector', num_envs, label=f'Ray worker {index} collector')
        self.collector = SampleCollector(manager, self.policy.collect_mode, torch.device('cpu'))

    def ping(self) -> int:
        """The worker is up (Ray has placed and built it)."""
        return self.index

    def reset(self, seed: int) -> None:
        """New episodes; env i of the run's collector is seeded with `seed + i`, as the local collector does."""
        self.collector.reset(seed=seed + self.first_env)

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
