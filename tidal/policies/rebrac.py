"""ReBRAC: TD3+BC with the design choices that make it strong, and a behaviour penalty in the critics' target too.

Tarasov, Kurenkov, Nikulin and Kolesnikov 2023, "Revisiting the Minimalist Approach to Offline Reinforcement
Learning" (arXiv 2305.09836). On TD3's update: the actor minimises beta_1 ||pi(s) - a||^2 - Q(s, pi(s)) / mean |Q|
over the twin critics' minimum (eq. 2); the critics' target subtracts beta_2 ||a' - a'_data||^2, the distance of the
target actor's (smoothed) action at s' from the action the dataset took there (eq. 3); the critics have a LayerNorm
after every hidden layer; networks are three layers deep; batches are large (1024); the targets move with the
actor. Defaults are the paper's (and CORL's) general ones; the two betas are what the paper tunes per dataset.
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.base.defaults import FreeDict
from tidal.policies.offline_common import DatasetLearning
from tidal.policies.td3 import TD3Policy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import rebrac_actor_loss


class BehaviourRegularizedTD3(TD3Policy):
    """ReBRAC's losses on TD3; `ReBRACPolicy` adds the dataset."""

    config = dict(
        model=FreeDict(actor_hidden_sizes=[256, 256, 256], critic_hidden_sizes=[256, 256, 256],
                       critic_layer_norm=True),
        learn=dict(
            batch_size=1024,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            target_update='with_actor',
            # (float >= 0) beta_1: weight of the actor's squared distance from the dataset's action (eq. 2).
            actor_bc_coef=1.0,
            # (float >= 0) beta_2: weight of the target action's squared distance from the dataset's next action,
            # subtracted from the critics' target (eq. 3).
            critic_bc_coef=1.0,
            # (bool) Divide Q in the actor's loss by its mean magnitude over the batch (held constant).
            normalize_q=True,
        ),
    )

    def _next_q(self, batch: dict[str, Any], next_action: torch.Tensor) -> torch.Tensor:
        """eq. 3: min_i Q'_i(s', a') - beta_2 ||a' - a'_data||^2."""
        penalty = (next_action - batch['next_action']).pow(2).sum(dim=-1)
        return super()._next_q(batch, next_action) - self._cfg.learn.critic_bc_coef * penalty

    def _actor_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """eq. 2 on the critics' minimum, the critics held constant."""
        obs, learn = batch['obs'], self._cfg.learn
        action = self._model.actor(obs)
        q = self._model.critic(obs, action).min(dim=0).values
        actor_loss, penalty = rebrac_actor_loss(q, action, batch['action'], learn.actor_bc_coef, learn.normalize_q)
        return actor_loss, {'actor_loss': actor_loss.detach(), 'bc_loss': penalty.detach().mean()}

    def _actor_monitors(self) -> list[str]:
        return ['actor_loss', 'bc_loss']


@POLICY_REGISTRY.register('rebrac')
class ReBRACPolicy(DatasetLearning, BehaviourRegularizedTD3):
    config = dict(type='rebrac')
