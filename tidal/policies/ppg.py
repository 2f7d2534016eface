"""Phasic Policy Gradient: PPO's policy phase, and an auxiliary phase that distils value into the policy net.

Cobbe et al. 2020, "Phasic Policy Gradient" (arXiv 2009.04416), on the disjoint policy-value network
(`ppg_disjoint`). The policy phase is PPO (algorithm 1, lines 2-6), the value head trained on its own
squared error. Every `aux.interval` rollouts the feed runs the auxiliary phase (lines 7-12) over all of
them: the true value loss, the auxiliary value loss of the aux head on the policy network (eq. 2's
L^aux), and beta_clone * KL(pi_old || pi) against the policy frozen at the start of the phase (eq. 2).
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

import torch
import torch.nn.functional as F
from torch.distributions import Distribution

from tidal.policies.common import adam, run_plan, split_action_mask
from tidal.base.stages import LearnPlan, LossStage
from tidal.base.modes import LearnView
from tidal.policies.ppo import PPOPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils.distributions import policy_kl

AUX_MONITORS = ['aux_total_loss', 'aux_value_loss', 'aux_true_value_loss', 'aux_policy_kl', 'aux_grad_norm']


@POLICY_REGISTRY.register('ppg')
class PPGPolicy(PPOPolicy):
    config = dict(
        type='ppg',
        normalize=dict(
            # (bool) Divide rewards by the running std of the discounted return, on by default for PPG (off for
            # PPO): the auxiliary phase fits two value heads with a KL term of order 0.01 under one clipped
            # gradient step, so unscaled value targets (returns of -100 on Acrobot) swamp the KL and rewrite the
            # policy (benchmarks/results.md, PPG on Acrobot-v1). The paper's Procgen runs normalize rewards too.
            reward=True,
        ),
        aux=dict(
            # (bool) Run auxiliary phases; without them PPG is PPO on a disjoint policy-value network.
            enabled=True,
            # (int > 0) Rollouts (policy iterations) between auxiliary phases, N_pi in the paper; the aux buffer
            # holds this many rollouts.
            interval=32,
            # (int > 0) Sequences per auxiliary minibatch.
            mini_batch_size=8,
            # (int > 0 or None) Steps of one env per sequence; None takes a whole rollout of one env. Must
            # divide the rollout's steps per env.
            mini_batch_length=None,
            # (int > 0) Epochs over the aux buffer per auxiliary phase, E_aux in the paper.
            num_updates_per_train_iter=6,
            # (float >= 0) beta_clone: weight of KL(pi_old || pi), which keeps the policy where it was
            # while its network learns the value.
            policy_kl_loss_weight=1.0,
            # (float > 0 or None) Adam learning rate of the auxiliary phase (None: learn.learning_rate); it decays
            # with learn.lr_decay.
            learning_rate=None,
        ),
    )
    pipeline = 'ppg'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'ppg_disjoint', ['tidal.models.actor_critic']

    def _evaluate(self, observation: torch.Tensor, mask: Any) -> tuple[Distribution, torch.Tensor]:
        """The policy phase never computes the aux head."""
        dist, value, _ = self._model(observation, require_aux=False, action_mask=mask)
        return dist, value

    # ----- the auxiliary phase ---------------------------------------------------------------
    def _init_learn(self) -> None:
        super()._init_learn()
        self._aux_learning_rate = self._cfg.aux.learning_rate or self._cfg.learn.learning_rate
        self._aux_optimizer = self.parts.optimizer('aux_optimizer', adam(self._model.parameters(),
                                                                         self._aux_learning_rate))
        # pi_old of the running phase, copied from the model before each auxiliary phase
        self._old_model = self.parts.network('old_model', copy.deepcopy(self._model).requires_grad_(False),
                                             saved=False)

    @property
    def aux_mode(self) -> LearnView:
        """The auxiliary phase as a learn mode of its own: `reset` opens a phase, `forward` is one update."""
        self._check_enabled('learn')
        return LearnView(forward=self.parts.in_mode(self._forward_aux, True), plan=self.parts.in_mode(self._aux_plan, True),
                         state_dict=self._state_dict_learn,
                         load_state_dict=self._load_state_dict_learn, monitor_vars=lambda: list(AUX_MONITORS),
                         reset=self._begin_aux_phase, optimizers=lambda: [self._aux_optimizer], cfg=self._cfg)

    def extra_views(self) -> dict[str, Any]:
        return {'aux': self.aux_mode}

    def _begin_aux_phase(self) -> None:
        """Freeze pi_old: the policy as the phase found it."""
        self._old_model.load_state_dict(self._model.state_dict())

    def _forward_aux(self, batch: dict[str, Any]) -> dict[str, Any]:
        return run_plan(self._aux_plan(batch), batch, self._compiled, self.parts)

    def _aux_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """One clipped step on the joint loss; the auxiliary phase follows the policy phase's schedule."""
        self._set_learning_rate(self._aux_optimizer, self._aux_learning_rate, batch)
        return LearnPlan([LossStage(self._aux_optimizer, self._aux_loss, self._cfg.learn.grad_clip_norm,
                                    loss_key='aux_total_loss', norm_key='aux_grad_norm')])

    def _aux_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        observation, mask = split_action_mask(batch['obs'])
        dist, value, aux_value = self._model(observation, require_aux=True, action_mask=mask)
        with torch.no_grad():
            old_dist = self._old_model.policy(observation, action_mask=mask)
        returns = batch['return']
        true_value_loss = F.mse_loss(value, returns)  # L^value, on the value network (algorithm 1, line 10)
        aux_value_loss = F.mse_loss(aux_value, returns)  # L^aux (eq. 2's first term)
        kl = policy_kl(old_dist, dist).mean()  # behaviour cloning term of L^joint (eq. 2)
        loss = true_value_loss + aux_value_loss + self._cfg.aux.policy_kl_loss_weight * kl
        return loss, {'aux_value_loss': aux_value_loss.detach(), 'aux_true_value_loss': true_value_loss.detach(),
                      'aux_policy_kl': kl.detach()}

