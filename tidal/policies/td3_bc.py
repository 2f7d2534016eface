"""TD3+BC: TD3 with a behaviour-cloning term in the actor's loss, for learning from a fixed dataset.

Fujimoto and Gu 2021, "A Minimalist Approach to Offline Reinforcement Learning" (arXiv 2106.06860). Two changes to
TD3 make it offline: the actor maximises lambda Q(s, pi(s)) - (pi(s) - a)^2, the squared error pulling it towards
the dataset's action a, with lambda = alpha / mean |Q| so that alpha alone sets the balance whatever the scale of
the returns (eq. 3); and the observations are normalised by the dataset's mean and standard deviation (eq. 4,
`collect.normalize_states`). The critics learn exactly as TD3's. Defaults are the paper's (and CORL's).
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.base.defaults import FreeDict
from tidal.policies.offline_common import DatasetLearning
from tidal.policies.td3 import TD3Policy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import td3_bc_actor_loss


@POLICY_REGISTRY.register('td3_bc')
class TD3BCPolicy(DatasetLearning, TD3Policy):
    config = dict(
        type='td3_bc',
        model=FreeDict(actor_hidden_sizes=[256, 256], critic_hidden_sizes=[256, 256]),
        learn=dict(
            learning_rate_actor=3e-4,
            learning_rate_critic=3e-4,
            # (float > 0) alpha of lambda = alpha / mean |Q|: the weight of the return against cloning the
            # dataset's actions (the paper's 2.5; larger trusts the critics more).
            alpha=2.5,
        ),
        collect=dict(normalize_states=True),
    )

    def _actor_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """eq. 3: -lambda Q_1(s, pi(s)) + (pi(s) - a)^2, the critics held constant."""
        obs = batch['obs']
        action = self._model.actor(obs)
        q = self._model.critic(obs, action)[0]
        actor_loss, lmbda = td3_bc_actor_loss(q, action, batch['action'], self._cfg.learn.alpha)
        bc_loss = (action - batch['action']).detach().pow(2).mean()
        return actor_loss, {'actor_loss': actor_loss.detach(), 'bc_loss': bc_loss, 'lambda': lmbda}

    def _actor_monitors(self) -> list[str]:
        return ['actor_loss', 'bc_loss', 'lambda']
