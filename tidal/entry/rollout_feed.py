"""The on-policy data feed: each step collects one rollout with the current policy, learns from it, and
lets it go.

The policy's `get_train_sample` turns the rollout into training rows (GAE advantages and returns for
PPO); this feed only cuts the rows into `epoch_per_collect` epochs of shuffled minibatches.
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from easydict import EasyDict

from tidal.errors import ConfigError
from tidal.policies.base import Policy
from tidal.worker.collector import SampleCollector
from tidal.worker.learner import Learner
from tidal.worker.tensor import tree_map


def rollout_rows(rollout: dict[str, Any]) -> int:
    leaf = rollout
    while isinstance(leaf, dict):
        leaf = next(iter(leaf.values()))
    return int(leaf.shape[0])


def take_rows(rollout: dict[str, Any], index: torch.Tensor) -> dict[str, Any]:
    """The rows `index` of every column (nested dicts too), in that order."""
    return tree_map(lambda column: column.index_select(0, index.to(column.device)), rollout)


class RolloutFeed:
    """Collect `n_sample` env steps, then `epoch_per_collect` passes over them in minibatches of
    `batch_size` rows (the last one of a pass may be smaller); nothing is kept for later."""

    def __init__(self, cfg: EasyDict, policy: Policy, collector: SampleCollector, learner: Learner) -> None:
        ignored = (('random_collect_size', cfg.policy.random_collect_size > 0, 'no warm-up'),
                   ('priority', cfg.policy.priority, 'no prioritized replay'),
                   ('collect.unroll_len', cfg.policy.collect.unroll_len != 1, 'no sequence samples'),
                   ('learn.update_per_collect', cfg.policy.learn.update_per_collect != 1,
                    'its updates per rollout set by learn.epoch_per_collect and learn.batch_size'))
        for key, set_by_user, what in ignored:
            if set_by_user:
                raise ConfigError(f"policy.{key}: '{cfg.policy.type}' learns on-policy, from each fresh "
                                  f'rollout, so it has {what}; leave the key out')
        self.policy, self.collector, self.learner = policy, collector, learner
        self.n_sample = cfg.policy.collect.n_sample
        self.batch_size = cfg.policy.learn.batch_size
        self.epochs = cfg.policy.learn.epoch_per_collect
        self.generator = torch.Generator()  # shuffles on the CPU, so a seed gives the same order on any device
        self.generator.manual_seed(cfg.seed)

    def warmed_up(self) -> bool:
        return True

    def step(self, env_budget: Optional[int]) -> None:
        self.learn(self.collector.collect(self.n_sample))

    def learn(self, rollout: dict[str, Any]) -> None:
        """The policy phase: epochs of shuffled minibatches over one rollout."""
        rows = rollout_rows(rollout)
        env_step = self.collector.env_step  # lets the policy decay its rates with the env steps seen
        for _ in range(self.epochs):
            order = torch.randperm(rows, generator=self.generator)
            for start in range(0, rows, self.batch_size):
                batch = take_rows(rollout, order[start:start + self.batch_size])
                batch['env_step'] = env_step
                self.learner.train(batch)

    def state_dict(self) -> dict[str, Any]:
        return {'generator': self.generator.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.generator.set_state(state['generator'])
