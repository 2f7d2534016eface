"""SQIL on top of soft Q-learning: imitation as RL with a constant reward, with discrete actions.

Reddy et al. 2019, "SQIL: Imitation Learning via Reinforcement Learning with Sparse Rewards" (arXiv 1905.11108),
whose algorithm 1 is soft Q-learning, as DI-engine runs it (its `sql` policy under its SQIL entry). Each batch is
half expert demonstrations relabelled with reward 1 and half the agent's own replay relabelled with reward 0; the
learning itself is SQL's. The demonstrations come from a file (`expert_data_path`) or are recorded first from an
expert's checkpoint (`collect.model_path`).
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.base.stages import LearnPlan
from tidal.policies.sql import SQLPolicy
from tidal.policies.sqil_common import SQILDemonstrations, relabel_rewards, td_error_by_half
from tidal.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register('sqil')
class SQILPolicy(SQILDemonstrations, SQLPolicy):
    config = dict(
        type='sqil',
        collect=dict(
            # (str) An expert's tidal checkpoint, or its run folder (ckpt/best.pt, else latest.pt): without an
            # expert_data_path the run first records collect.expert_episodes episodes of its eval-mode (greedy)
            # actions on this run's collector envs, as DI-engine's SQIL collects from the expert at its model_path.
            # The expert's own run folder (its config.yaml) says which policy and model it is.
            model_path='',
            # (int > 0) Episodes recorded from collect.model_path before training.
            expert_episodes=10,
        ),
    )
    pipeline = 'sqil'

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        relabel_rewards(batch)  # r = 1 for demonstrations, r = 0 for the agent's data
        return super()._learn_plan(batch)

    def _q_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """SQL's, with the mean TD error of each half of the batch beside it."""
        loss, values = super()._q_loss(batch)
        values.update(td_error_by_half(values['priority'], batch['expert']))
        return loss, values

    def _monitor_vars_learn(self) -> list[str]:
        return super()._monitor_vars_learn() + ['agent_td_error', 'expert_td_error']
