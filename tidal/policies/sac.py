"""Soft Actor-Critic for continuous actions.

Haarnoja et al. 2018, "Soft Actor-Critic Algorithms and Applications" (arXiv 1812.05905), the
version without a state-value network: twin Q critics with a Polyak-averaged target, a
tanh-squashed Gaussian actor trained through the reparameterization trick, and an entropy
temperature alpha tuned towards a target entropy.

With `multi_agent`, the same losses run per agent ([B, agents] values): the actor, shared by all
agents, acts on each agent's own state, and the critics score each agent's action from the global
state (MASAC, as DI-engine's `multi_agent` option of its SAC policies).
"""
from __future__ import annotations

from typing import Any, Callable, Mapping, Optional

import numpy as np
import torch

from tidal.base.errors import TidalError
from tidal.models import TargetNetwork, Temperature
from tidal.models.acting import ActingNetwork, TanhMean
from tidal.base.modes import ActingSteps, as_given, no_draw
from tidal.base.nest import leading_dim
from tidal.base.stages import LearnPlan, LossStage
from tidal.policies.common import adam, bootstrap_mask, sample_weight, td_reward
from tidal.policies.max_entropy import MaxEntropyActorCritic
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import tanh_gaussian_sample, v_1step_td_error


@POLICY_REGISTRY.register('sac')
class SACPolicy(MaxEntropyActorCritic):
    config = dict(
        type='sac',
        # (bool) Multi-agent data: obs dicts of agent_state [agents, obs], global_state [global] and (discrete
        # actions) action_mask [agents, actions], actions and losses per agent; the default model becomes
        # the policy's multi-agent actor-critic (continuous_maqac or discrete_maqac).
        multi_agent=False,
        # (int in [1, 1000]) Rewards summed before the critics' target bootstraps (n-step returns): a window
        # never crosses an episode's end. The soft value enters only at the bootstrap: the window's own steps add
        # their rewards, not the entropy of actions an older policy took there.
        nstep=1,
        learn=dict(
            # (bool) Learn log(alpha) rather than alpha itself (keeps alpha positive, better conditioned).
            log_space=True,
            # (list[float in [0, 1)] of length 2) Adam's betas for every optimizer of the policy, the decays of its
            # running means of the gradient and of its square.
            betas=[0.9, 0.999],
        ),
    )
    action_space = 'continuous'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        """With `multi_agent`, the multi-agent actor-critic: the losses already work per agent."""
        if cfg.get('multi_agent'):
            return 'continuous_maqac', ['tidal.models.maqac']
        return 'continuous_qac', ['tidal.models.qac']

    def _agent_axes(self) -> tuple[int, ...]:
        """(agents,) under multi_agent, where actions carry an agent axis after the batch; else ()."""
        return (self._model.agent_num,) if self._cfg.get('multi_agent', False) else ()

    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._gamma = learn.discount_factor
        self._target_theta = learn.target_theta
        if learn.init_w:
            self._model.actor_head.init_uniform(learn.init_w)
        self._optimizer_q = self.parts.optimizer('optimizer_q', adam(self._model.critic.parameters(),
                                                                    learn.learning_rate_q, learn.betas))
        self._temperature = self.parts.scalar('temperature', Temperature(learn.alpha, learn.auto_alpha,
                                                                         learn.log_space).to(self._device))
        # the actor and the temperature share one optimizer: each loss sees the other's parameters
        # detached, so one backward and one fused step equal two separate Adam updates
        self._optimizer_policy = self.parts.optimizer('optimizer_policy', adam([
            {'params': self._model.actor_parameters(), 'lr': learn.learning_rate_policy},
            {'params': list(self._temperature.parameters()), 'lr': learn.learning_rate_alpha},
        ], learn.learning_rate_policy, learn.betas))
        self._init_target_networks()
        self._target_entropy = self._configured_target_entropy(self._model.action_dim, self._default_target_entropy())

    def _init_target_networks(self) -> None:
        """The Polyak-averaged copies that the TD target bootstraps from."""
        self._target_critic = self.parts.target('target_critic', TargetNetwork(self._model.critic))

    def _default_target_entropy(self) -> float:
        return -float(np.prod(self._cfg.model.action_shape))

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The critic step, then one step of the actor and the temperature, then the Polyak update; the
        reparameterization noise of both steps is drawn here, in the order the steps use it."""
        self._draw_update_noise(batch)
        return LearnPlan([self._critic_stage(), self._policy_stage()],
                         after=lambda: self._target_critic.update(self._target_theta))

    def _draw_update_noise(self, batch: dict[str, Any]) -> None:
        """Scale the batch's rewards, then draw the reparameterization noise of the critic step's next actions and
        of the actor step's fresh actions, in that order."""
        self._normalize_reward(batch)
        batch['next_noise'] = self._action_noise(batch['next_obs'])
        batch['noise'] = self._action_noise(batch['obs'])

    def _critic_stage(self) -> LossStage:
        return LossStage(self._optimizer_q, self._critic_loss, None, loss_key=None, norm_key=None)

    def _policy_stage(self, seen: Optional[Callable[[dict[str, torch.Tensor]], None]] = None) -> LossStage:
        """The step of the actor and the temperature on the critics held constant (`seen`: LossStage.seen)."""
        return LossStage(self._optimizer_policy, self._policy_loss, None, loss_key=None, norm_key=None,
                         frozen=(self._model.critic,), after_step=self._temperature.clamp_, seen=seen)

    @torch.no_grad()
    def _next_action(self, next_obs: Any, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The current actor's reparameterized action at s' and its log-probability, for the soft value of s'."""
        next_mu, next_log_std = self._model.actor(next_obs)
        return tanh_gaussian_sample(next_mu, next_log_std, noise=noise)

    def _action_noise(self, obs: Any) -> torch.Tensor:
        """Standard normal noise for one reparameterized action per row of `obs`."""
        shape = (leading_dim(obs), *self._agent_axes(), self._model.action_dim)
        return torch.randn(shape, device=self._device)

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """J_Q (eq. 5), one term per critic of the ensemble, against the soft value of s' (eq. 3)."""
        critic_losses, td_error, q, next_value = self._critic_terms(batch)
        return critic_losses.sum(), self._critic_info(critic_losses, td_error, q, next_value)

    def _critic_terms(self, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(each critic's J_Q [E], TD errors, Q(s, a) [E, B], the value of s' the targets bootstrap from)."""
        obs, action, next_obs = batch['obs'], batch['action'], batch['next_obs']
        reward, discount = td_reward(batch, self._gamma)  # one step's, or an n-step window's (policy.nstep)
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        next_action, next_log_prob = self._next_action(next_obs, batch['next_noise'])
        with torch.no_grad():
            next_q = self._target_critic(next_obs, next_action).min(dim=0).values
            next_value = self._next_value(next_q, next_log_prob)
        q = self._model.critic(obs, action)
        critic_losses, td_error = v_1step_td_error(q, next_value, reward, terminated, discount, weight)
        return critic_losses, td_error, q, next_value

    def _next_value(self, next_q: torch.Tensor, next_log_prob: torch.Tensor) -> torch.Tensor:
        """The soft value of s' (eq. 3): Q'(s', a') - alpha log pi(a' | s')."""
        return next_q - self._temperature.value * next_log_prob

    def _policy_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """J_pi (eq. 7) on a fresh reparameterized action, the critics held constant, plus J(alpha) (eq. 18)."""
        obs, alpha = batch['obs'], self._temperature.value
        mu, log_std = self._model.actor(obs)
        action_new, log_prob = tanh_gaussian_sample(mu, log_std, noise=batch['noise'])
        q_new = self._model.critic(obs, action_new).min(dim=0).values
        policy_losses = alpha * log_prob - q_new
        values = self._policy_monitors(batch, policy_losses)
        policy_loss = policy_losses.mean()
        values.update(policy_loss=policy_loss.detach(), entropy=-log_prob.detach().mean(), alpha=alpha)
        if not self._temperature.auto:
            return policy_loss, values
        alpha_loss = self._temperature.loss(log_prob, self._target_entropy)
        values['alpha_loss'] = alpha_loss.detach()
        return policy_loss + alpha_loss, values

    @staticmethod
    def _critic_info(critic_losses: torch.Tensor, td_error: torch.Tensor, q: torch.Tensor,
                     target: torch.Tensor) -> dict[str, torch.Tensor]:
        """The critics' monitored values (detached 0-d tensors) and the per-sample priority."""
        info = dict(critic_loss=critic_losses[0].detach(), td_error=td_error.detach().abs().mean(),
                    q_value=q.detach().mean(), target_q_value=target.mean(), priority=_sample_priority(td_error.detach()))
        if len(critic_losses) > 1:
            info['twin_critic_loss'] = critic_losses[1].detach()
        return info

    def _policy_monitors(self, batch: dict[str, Any], policy_losses: torch.Tensor) -> dict[str, torch.Tensor]:
        """Extra values a variant measures on the per-sample policy loss before the actor step."""
        return {}

    def _monitor_vars_learn(self) -> list[str]:
        names = ['critic_loss', 'policy_loss', 'alpha', 'td_error', 'q_value', 'target_q_value', 'entropy']
        if self._cfg.model.get('twin_critic', True):
            names.append('twin_critic_loss')
        if self._cfg.learn.auto_alpha:
            names.append('alpha_loss')
        return names

    # ----- collect and eval ------------------------------------------------------------------
    def _forward_collect(self, obs: torch.Tensor, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self._acting('collect').forward(obs)

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        shape = (leading_dim(obs), *self._agent_axes(), self._model.action_dim)
        return {'action': torch.rand(shape, device=self._device) * 2.0 - 1.0}

    def _forward_eval(self, obs: torch.Tensor) -> dict[str, torch.Tensor]:
        """The mean action tanh(mu) (eval.deterministic), else a tanh-Gaussian sample as collection draws."""
        return self._acting('eval').forward(obs)

    def _acting(self, mode: str) -> ActingSteps:
        """A tanh-Gaussian sample (collection; evaluation without eval.deterministic, from the eval generator), or
        the mean action tanh(mu)."""
        if mode == 'collect':
            return ActingSteps(as_given, self._draw, _act_sampled, self._model)
        if self._cfg.eval.deterministic:
            return ActingSteps(as_given, no_draw, act_squashed_mean, self._model)
        return ActingSteps(as_given, self._draw, _act_sampled, self._model, self._eval_generator)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _draw(self, obs: Any, generator: Optional[torch.Generator]) -> torch.Tensor:
        """The standard normal noise of one action per row (and agent) of `obs`."""
        weight = next(self._model.parameters())
        return torch.randn((leading_dim(obs), *self._agent_axes(), self._model.action_dim), dtype=weight.dtype,
                           device=weight.device, generator=generator)

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """tanh(mu), as eval.deterministic acts; under multi_agent on `agent_state` [B, agents, obs] alone,
        the one input the shared actor reads."""
        if action_mask:
            raise TidalError(f"policy '{self._cfg.type}' acts on continuous actions and takes no action mask")
        multi_agent = self._cfg.get('multi_agent', False)
        return ActingNetwork(TanhMean(self._model.actor_network()),
                             input_names=('agent_state',) if multi_agent else ('obs',))


def _sample_priority(td_error: torch.Tensor) -> torch.Tensor:
    """|TD error| [E, B, *agents] averaged over the critics (and agents) into one priority per sample [B]."""
    return td_error.abs().reshape(td_error.shape[0], td_error.shape[1], -1).mean(dim=(0, 2))


# the acting steps of SAC's modes (`ActingSteps`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_sampled(model: Any, obs: Any, noise: torch.Tensor) -> dict[str, torch.Tensor]:
    mu, log_std = model.actor(obs)
    action, _ = tanh_gaussian_sample(mu, log_std, noise=noise)
    return {'action': action}


@torch.no_grad()
def act_squashed_mean(model: Any, obs: Any, noise: None) -> dict[str, torch.Tensor]:
    """tanh(mu), the action of a Gaussian actor squashed by tanh at its mean (SAC's and IQL's evaluation)."""
    return {'action': torch.tanh(model.actor(obs)[0])}
