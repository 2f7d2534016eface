"""Advantage actor-critic, in its synchronous form (A2C).

Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning" (arXiv 1602.01783): A3C's loss (algorithm
S3, with section 4's entropy bonus), made synchronous: every env acts with the same weights and their rollout makes
the update, where A3C's actor-learners each stepped shared weights with gradients of their own. Against PPO: each
rollout is learned from once, one gradient step per minibatch on the plain policy gradient -A log pi(a|s), with no
probability ratio, no clipping and no epochs. Rollout, GAE advantages (gae_lambda=1: the paper's n-step returns) and
acting are `OnPolicyActorCritic`'s; the defaults are DI-engine's A2C.
"""
from __future__ import annotations

from typing import Any

import torch

from tidal.base.stages import LearnPlan, LossStage
from tidal.policies.common import adam, split_action_mask
from tidal.policies.on_policy import OnPolicyActorCritic
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import explained_variance, normalize_advantage
from tidal.rl_utils.a2c import a2c_loss


@POLICY_REGISTRY.register('a2c')
class A2CPolicy(OnPolicyActorCritic):
    config = dict(
        type='a2c',
        learn=dict(
            # (int in {1}) Passes over each rollout: one, a gradient step per minibatch (more passes are PPO's, whose
            # clipped ratio keeps the policy near the one that collected the rollout).
            epoch_per_collect=1,
            learning_rate=1e-3,
            entropy_weight=0.01,
            adv_norm=False,
            # (list[float in [0, 1)] of length 2) Adam's betas, the decays of its running means of the gradient and
            # of its square (DI-engine's Atari A2C configs take [0.0, 0.99], close to RMSprop).
            betas=[0.9, 0.999],
            # (float > 0) Adam's epsilon, added to the root of its second moment.
            eps=1e-8,
        ),
        collect=dict(
            n_sample=80,
            discount_factor=0.9,
        ),
    )

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._optimizer = self.parts.optimizer('optimizer', adam(self._model.parameters(), learn.learning_rate,
                                                                 learn.betas, learn.eps))

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """One step on the A2C loss of a minibatch, its gradient norm clipped to learn.grad_clip_norm."""
        return LearnPlan([LossStage(self._optimizer, self._a2c_loss, self._cfg.learn.grad_clip_norm)])

    def _a2c_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The actor-critic loss of one minibatch and what to log of it."""
        learn = self._cfg.learn
        # 1. pi(.|s) and V(s) of the weights of now, on the observations as collection normalized them
        dist, value = self._evaluate(*split_action_mask(batch['obs']))
        # 2. the advantages of collection, A = GAE(lambda), and the value targets R = A + V
        advantage = batch['advantage']
        if learn.adv_norm:
            advantage = normalize_advantage(advantage)
        # 3. policy gradient, squared error of V to R and entropy bonus (algorithm S3, section 4)
        loss = a2c_loss(dist.log_prob(batch['action']), dist.entropy(), value, advantage, batch['return'],
                        learn.value_weight, learn.entropy_weight)
        return loss.total, {
            'policy_loss': loss.policy.detach(), 'value_loss': loss.value.detach(), 'entropy': loss.entropy.detach(),
            'explained_variance': explained_variance(batch['value'], batch['return']),
        }

    def _monitor_vars_learn(self) -> list[str]:
        return ['total_loss', 'policy_loss', 'value_loss', 'entropy', 'explained_variance', 'grad_norm']
