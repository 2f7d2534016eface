"""Soft Actor-Critic with a state-value network, the original formulation.

Haarnoja et al. 2018, "Soft Actor-Critic: Off-Policy Maximum Entropy Deep Reinforcement Learning
with a Stochastic Actor" (arXiv 1801.01290). Unlike `sac`, the Q critics bootstrap from a separate
state-value network V (through its Polyak-averaged copy) instead of from target critics, V itself
being regressed to the soft value of the current policy; alpha is fixed and rewards are scaled.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch

from tidal.base.errors import ConfigError
from tidal.base.stages import LearnPlan, LossStage
from tidal.models import TargetNetwork
from tidal.policies.common import adam, bootstrap_mask, sample_weight, td_reward
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import tanh_gaussian_sample, v_1step_td_error


@POLICY_REGISTRY.register('sac_v')
class SACVPolicy(SACPolicy):
    config = dict(
        type='sac_v',
        learn=dict(
            # (float > 0) Adam learning rate of the state-value network V.
            learning_rate_value=3e-4,
            # (float > 0) Factor on the reward in the Q target. With alpha fixed only alpha / reward_scale matters, up
            # to the scale of Q: the paper's alpha=1, reward_scale=5 is this policy's alpha=0.2, reward_scale=1.
            reward_scale=1.0,
            # (bool) Tune alpha towards target_entropy (SAC v2); off by default, the paper keeps alpha fixed.
            auto_alpha=False,
        ),
    )

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        """The V network has no per-agent form, so neither has this policy."""
        if cfg.get('multi_agent'):
            raise ConfigError(f"policy '{cls.config['type']}' has no multi-agent form; config key "
                              f"'policy.multi_agent' must be False")
        return 'continuous_qvac', ['tidal.models.qvac']

    def _init_learn(self) -> None:
        super()._init_learn()
        self._reward_scale = self._cfg.learn.reward_scale
        self._optimizer_value = self.parts.optimizer('optimizer_value', adam(self._model.value.parameters(),
                                                                            self._cfg.learn.learning_rate_value,
                                                                            self._cfg.learn.betas))

    def _init_target_networks(self) -> None:
        # the Q target (eq. 8) bootstraps from V_target(s'): the Q critics need no target copy of their own
        self._target_value = self.parts.target('target_value', TargetNetwork(self._model.value))

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The steps of the paper's Algorithm 1 (V, Q, then the policy) rather than RL Coach's order (policy, V,
        Q): each loss then sees the networks the algorithm box specifies, and the actor step comes after the
        critics as in `sac`, so both policies share `_policy_loss`. Then the Polyak update of the target value
        network. The noise of the V target's action and of the actor's fresh action is drawn here, in that order."""
        self._normalize_reward(batch)
        batch['value_noise'] = self._action_noise(batch['obs'])
        batch['noise'] = self._action_noise(batch['obs'])
        value = LossStage(self._optimizer_value, self._value_loss, None, loss_key=None, norm_key=None)
        # with auto_alpha, the temperature loss (SAC v2, eq. 18) is stepped together with the policy
        return LearnPlan([value, self._critic_stage(), self._policy_stage()],
                         after=lambda: self._target_value.update(self._target_theta))

    def _value_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """J_V (eq. 5): V(s) towards min_i Q_i(s, a~) - alpha log pi(a~|s), a~ ~ pi(.|s) freshly sampled; the
        paper's factor 1/2 is left out, as in the critic losses."""
        obs = batch['obs']
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        alpha = self._temperature.value
        with torch.no_grad():
            mu, log_std = self._model.actor(obs)
            sampled_action, sampled_log_prob = tanh_gaussian_sample(mu, log_std, noise=batch['value_noise'])
            value_target = self._model.critic(obs, sampled_action).min(dim=0).values - alpha * sampled_log_prob
        value = self._model.value(obs)
        squared_error = (value_target - value).pow(2)
        value_loss = (squared_error if weight is None else squared_error * weight).mean()
        return value_loss, dict(value_loss=value_loss.detach(), v_value=value.detach().mean(),
                                target_v_value=value_target.mean())

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """J_Q (eqs. 7-8): each Q_i(s, a) towards reward_scale r + gamma (1 - terminated) V_target(s')."""
        obs, action, next_obs = batch['obs'], batch['action'], batch['next_obs']
        reward, discount = td_reward(batch, self._gamma)  # one step's, or an n-step window's (policy.nstep)
        reward = self._reward_scale * reward
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        with torch.no_grad():
            next_value = self._target_value(next_obs)
        q = self._model.critic(obs, action)
        critic_losses, td_error = v_1step_td_error(q, next_value, reward, terminated, discount, weight)
        return critic_losses.sum(), self._critic_info(critic_losses, td_error, q, next_value)

    def _monitor_vars_learn(self) -> list[str]:
        return [*super()._monitor_vars_learn(), 'value_loss', 'v_value', 'target_v_value']

