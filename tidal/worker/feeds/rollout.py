"""The on-policy data feed: each step collects one rollout with the current policy, learns from it, and
lets it go.

The policy's `get_train_sample` turns the rollout into training rows (GAE advantages and returns for
PPO), and its learn mode's `prepare_rollout` may set them again, in place, with the learner's weights (V-trace);
this feed only cuts the rows into `epoch_per_collect` epochs of shuffled minibatches.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import ConfigError
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import EnvLayout, PolicyViews
from tidal.base.nest import leading_dim, take_rows
from tidal.registry import FEED_REGISTRY
from tidal.worker.feeds.common import Feed, within_budget


@FEED_REGISTRY.register('rollout')
class RolloutFeed(Feed):
    """Collect `n_sample` env steps, then `epoch_per_collect` passes over them in minibatches of
    `batch_size` rows (the last one of a pass may be smaller); nothing is kept for later.

    Needs `policy.learn.epoch_per_collect` (int > 0) in the policy's config.
    """

    name = 'rollout'
    SPEC = FeedSpec(entry_point='serial_pipeline_onpolicy', learns='learns on-policy', on_policy=True,
                    async_collection=False, rollout_ahead=True, groups=True)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        policy = cfg['policy']
        if 'epoch_per_collect' not in policy['learn']:
            raise ConfigError(f"policy '{policy['type']}' learns on-policy, so its config must declare "
                              f"policy.learn.epoch_per_collect (passes over each rollout)")
        ignored = (('random_collect_size', policy['random_collect_size'] > 0, 'no warm-up'),
                   ('priority', policy['priority'], 'no prioritized replay'),
                   ('collect.unroll_len', policy['collect']['unroll_len'] != 1, 'no sequence samples'),
                   ('learn.update_per_collect', policy['learn']['update_per_collect'] != 1,
                    'its updates per rollout set by learn.epoch_per_collect and learn.batch_size'))
        for key, set_by_user, what in ignored:
            if set_by_user:
                raise ConfigError(f"policy.{key}: '{policy['type']}' learns on-policy, from each fresh "
                                  f'rollout, so it has {what}; leave the key out')

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        self.check_config(cfg)
        self.collector, self.learner = collector, learner
        self.prepare_rollout = views.learn.prepare_rollout
        self.n_sample = cfg.policy.collect.n_sample
        self.batch_size = cfg.policy.learn.batch_size
        self.epochs = cfg.policy.learn.epoch_per_collect
        self.generator = torch.Generator()  # shuffles on the CPU, so a seed gives the same order on any device
        self.generator.manual_seed(cfg.seed)

    @classmethod
    def warmup(cls, cfg: Mapping[str, Any]) -> tuple[str, int]:
        return 'policy.collect.n_sample', 0  # the first rollout, however short, is learnt from

    def warmed_up(self) -> bool:
        return True

    def collection(self, env_budget: Optional[int]) -> tuple[int, bool]:
        """One rollout; the run's last is cut to the budget left."""
        return within_budget(self.n_sample, env_budget), False

    def step(self, env_budget: Optional[int]) -> None:
        """One rollout and its epochs."""
        n_sample, _ = self.collection(env_budget)
        self.learn(self.collector.collect(n_sample))

    def learn(self, rollout: dict[str, Any]) -> None:
        """The policy phase: epochs of shuffled minibatches over one rollout, which the learn mode prepares first."""
        rows = leading_dim(rollout)
        # every update asked for before this step has been made, in a seed group too (its recorded updates are
        # made at the end of each round), so the learn mode reads the weights they reached
        envs = self.collector.num_envs
        self.prepare_rollout(rollout, EnvLayout(num_envs=envs, steps=rows // envs))
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
