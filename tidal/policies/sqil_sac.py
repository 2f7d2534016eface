"""SQIL on top of SAC: imitation as RL with a constant reward.

Reddy et al. 2019, "SQIL: Imitation Learning via Reinforcement Learning with Sparse Rewards"
(arXiv 1905.11108). Each batch is half expert demonstrations relabelled with reward 1 and half the
agent's own replay relabelled with reward 0 (algorithm 1); the learning itself is plain SAC. The
pipeline marks the rows with an `expert` column; this class only relabels and adds monitors
(`sqil_common`, shared with SQIL on soft Q-learning, 'sqil').
"""
from __future__ import annotations

from typing import Any, Optional

import torch
import torch.nn.functional as F

from tidal.base.stages import LearnPlan
from tidal.policies.max_entropy import refuse_reward_normalization
from tidal.policies.sac import SACPolicy
from tidal.policies.sqil_common import SQILDemonstrations, relabel_rewards, td_error_by_half
from tidal.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register('sqil_sac')
class SQILSACPolicy(SQILDemonstrations, SACPolicy):
    config = dict(
        type='sqil_sac',
        learn=dict(
            # (bool) Log the cosine similarity of the policy gradients (actor's mean layer) from the agent
            # half and the expert half of each batch; costs two extra partial backward passes per update.
            monitor_cos_similarity=True,
        ),
    )
    pipeline = 'sqil'

    def __init__(self, cfg: dict, *args: Any, **kwargs: Any) -> None:
        refuse_reward_normalization(cfg, "SQIL relabels every reward (1 for a demonstration, 0 for the agent's own "
                                         "data)")
        super().__init__(cfg, *args, **kwargs)

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        relabel_rewards(batch)  # r = 1 for demonstrations, r = 0 for the agent's data
        return super()._learn_plan(batch)

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """SAC's, with the mean TD error of each half of the batch beside it."""
        loss, values = super()._critic_loss(batch)
        values.update(td_error_by_half(values['priority'], batch['expert']))
        return loss, values

    @classmethod
    def group_refusal(cls, cfg: Any) -> Optional[str]:
        if cfg.policy.learn.monitor_cos_similarity:
            return ('policy.learn.monitor_cos_similarity: its two extra backward passes per update cannot run in a '
                    'seed group; set it to False')
        return super().group_refusal(cfg)

    def _policy_monitors(self, batch: dict[str, Any], policy_losses: torch.Tensor) -> dict[str, torch.Tensor]:
        if not self._cfg.learn.monitor_cos_similarity:
            return {}
        expert = batch['expert']
        weight = self._model.actor_head.mu.weight
        agent_grad, = torch.autograd.grad(policy_losses[~expert].mean(), weight, retain_graph=True)
        expert_grad, = torch.autograd.grad(policy_losses[expert].mean(), weight, retain_graph=True)
        return {'cos_similarity': F.cosine_similarity(agent_grad.flatten(), expert_grad.flatten(), dim=0)}

    def _monitor_vars_learn(self) -> list[str]:
        names = super()._monitor_vars_learn() + ['agent_td_error', 'expert_td_error']
        if self._cfg.learn.monitor_cos_similarity:
            names.append('cos_similarity')
        return names
