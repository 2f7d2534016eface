"""Discrete CQL: DQN learning from a fixed dataset, held down on the actions the dataset never took.

Kumar et al. 2020, "Conservative Q-Learning for Offline Reinforcement Learning" (arXiv 2006.04779), CQL(H) for
discrete actions (DI-engine's `discrete_cql`): DQN's TD loss plus `cql_weight` times logsumexp_a Q(s, a) -
Q(s, a_data), which lowers the values of every action in proportion to their softmax and raises the dataset's. The
log-sum-exp is exact over the (allowed) actions. Everything else, the double-Q target, the target network, n-step
windows (inside each episode of the dataset), is DQN's. DI-engine's own learns QR-DQN's quantiles; this one learns
expected values, as the paper's CQL on DQN.
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.policies.common import split_action_mask
from tidal.policies.dqn import DQNPolicy
from tidal.policies.offline_common import DatasetLearning
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import discrete_cql_penalty


@POLICY_REGISTRY.register('discrete_cql')
class DiscreteCQLPolicy(DatasetLearning, DQNPolicy):
    config = dict(
        type='discrete_cql',
        learn=dict(
            update_per_collect=1,
            # (float >= 0) alpha, the weight of CQL's penalty against the TD loss (DI-engine's min_q_weight).
            cql_weight=1.0,
        ),
    )

    def _q_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """DQN's TD loss + cql_weight (logsumexp_a Q(s, a) - Q(s, a_data))."""
        observation, mask = split_action_mask(batch['obs'])
        q_all = self._model(observation)
        td_loss, info = self._td_loss(batch, q_all)
        penalty = discrete_cql_penalty(q_all, batch['action'], mask)
        return td_loss + self._cfg.learn.cql_weight * penalty, {**info, 'td_loss': td_loss.detach(),
                                                                'cql_penalty': penalty.detach()}

    def _monitor_vars_learn(self) -> list[str]:
        return [*super()._monitor_vars_learn(), 'td_loss', 'cql_penalty']
