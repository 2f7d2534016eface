"""SQIL's data feed: every batch is half agent replay, half expert demonstrations.

Reddy et al. 2019, "SQIL: Imitation Learning via Reinforcement Learning with Sparse Rewards"
(arXiv 1905.11108). The loop is the off-policy one; only the batch differs. The rewards are
relabelled by the policy from the batch's `expert` column (1 for expert rows, 0 for agent rows). The
demonstrations are a file, or are recorded from an expert's checkpoint when the feed is built.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch
from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.errors import ConfigError
from tidal.base.feed import FeedSpec, Trainer
from tidal.base.modes import PolicyViews
from tidal.base.nest import concat
from tidal.registry import FEED_REGISTRY
from tidal.worker.expert_demos import demos_from_checkpoint
from tidal.worker.feeds.nstep import extend_to_nstep
from tidal.worker.feeds.replay import ReplayFeed
from tidal.worker.offline_data import read_demos
from tidal.worker.replay_buffer import ReplayBuffer

EXPERT_FIELDS = ('obs', 'action', 'reward', 'next_obs', 'terminated', 'truncated')


def expert_buffer(cfg: EasyDict, device: torch.device) -> ReplayBuffer:
    """A replay buffer holding exactly the demonstrations of `policy.expert_data_path` (or `policy.collect.data_path`):
    a demonstration file or a Minari dataset; else those recorded first from the expert at
    `policy.collect.model_path` (where the policy declares it)."""
    key, path = _data_path(cfg.policy)
    model_path = cfg.policy.collect.get('model_path')
    if path:
        demos = read_demos(path, key, cfg)
    elif model_path:
        demos = demos_from_checkpoint(cfg, device)
    else:
        checkpoint = '' if model_path is None else " or policy.collect.model_path (an expert's checkpoint to " \
                                                   "record them from)"
        raise ConfigError(f"policy '{cfg.policy.type}' learns from demonstrations: set policy.expert_data_path "
                          f'(record them with tidal collect-demos){checkpoint}')
    buffer = ReplayBuffer(len(demos), device=device, seed=cfg.seed + 1)
    buffer.extend({field: demos.columns[field] for field in EXPERT_FIELDS})
    return buffer


def _data_path(policy_cfg: EasyDict) -> tuple[str, str]:
    """(key, path) of the demonstrations: policy.expert_data_path, or its DI-engine name policy.collect.data_path."""
    path, alias = policy_cfg.expert_data_path, policy_cfg.collect.get('data_path')
    if path and alias and path != alias:
        raise ConfigError(f"policy.expert_data_path '{path}' and policy.collect.data_path '{alias}' name two "
                          f"demonstration sources: set one of them")
    return ('policy.collect.data_path', alias) if alias and not path else ('policy.expert_data_path', path)


@FEED_REGISTRY.register('sqil')
class SQILFeed(ReplayFeed):
    """The replay feed with batches drawn half from the agent's buffer, half from the demos."""

    name = 'sqil'
    SPEC = FeedSpec(entry_point='serial_pipeline_sqil', learns='learns from demonstrations', on_policy=False,
                    async_collection=True)

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        if cfg['policy']['priority']:
            raise ConfigError('policy.priority is not supported with demonstrations (SQIL samples both halves '
                              'uniformly); set policy.priority=False')
        super().check_config(cfg)

    def __init__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> None:
        super().__init__(cfg, views, collector, learner)
        self.expert = expert_buffer(cfg, views.device)

    def sample_batch(self) -> dict[str, Any]:
        half = self.batch_size // 2
        agent = self.buffer.sample(half)
        expert = self.expert.sample(half)
        fields: tuple[str, ...] = EXPERT_FIELDS
        if self.nstep > 1:  # windows of the agent's env streams, and of the demonstrations' consecutive rows
            agent = extend_to_nstep(self.buffer, agent, self.nstep, stride=self.collector.num_envs)
            expert = extend_to_nstep(self.expert, expert, self.nstep, stride=1)
            fields = (*EXPERT_FIELDS, 'nstep_reward', 'nstep_len')
        batch = concat([{field: agent[field] for field in fields}, {field: expert[field] for field in fields}])
        batch['expert'] = torch.arange(2 * half, device=self.device) >= half
        return batch

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), 'expert': self.expert.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        super().load_state_dict(state)
        self.expert.load_state_dict(state['expert'])
