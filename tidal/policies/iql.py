"""Implicit Q-Learning: offline RL that never queries the critics on actions outside the dataset.

Kostrikov, Nair and Levine 2021, "Offline Reinforcement Learning with Implicit Q-Learning" (arXiv 2110.06169).
A state-value network V fits an upper expectile of the target critics' Q over the dataset's own actions (eq. 5), the
critics regress to r + gamma V(s') (eq. 6), so the maximum over actions is approximated without evaluating an unseen
action, and the actor is extracted by advantage-weighted regression on the dataset's actions, exp(beta (Q - V))
(eq. 7). The actor is a Gaussian whose mean is squashed by tanh and whose log std is one learnt value per action
dimension, as the paper's code and CORL have it. Defaults are the paper's for locomotion (tau 0.7, beta 3); the
actor's learning rate decays along a cosine over `learn.policy_lr_decay_iters` updates.

Order within an update, as CORL's: V's step (with the advantages and V(s') it reads before it), the critics' step,
the actor's step, the Polyak update of the target critics.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import torch

from tidal.base.defaults import FreeDict
from tidal.base.errors import TidalError
from tidal.base.modes import ActingSteps, as_given, no_draw
from tidal.base.nest import leading_dim
from tidal.base.stages import LearnPlan, LossStage
from tidal.models import TargetNetwork
from tidal.models.acting import ActingNetwork, TanhMean
from tidal.policies.base import Policy
from tidal.policies.common import UpdateCount, adam, bootstrap_mask
from tidal.policies.offline_common import DatasetLearning, OnlineContinuation
from tidal.policies.sac import act_squashed_mean
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import advantage_weights, expectile_loss, gaussian_log_prob, v_1step_td_error


class ImplicitQLearning(Policy):
    """IQL's learning and acting; `IQLPolicy` adds the dataset."""

    config = dict(
        model=FreeDict(state_dependent_std=False),
        learn=dict(
            # (float > 0) Adam learning rate of the critics.
            learning_rate_q=3e-4,
            # (float > 0) Adam learning rate of the state-value network.
            learning_rate_value=3e-4,
            # (float > 0) Adam learning rate of the actor (at the start of its cosine decay).
            learning_rate_policy=3e-4,
            # (int >= 0) Updates over which the actor's learning rate decays along a cosine to 0, as the paper's
            # code does over its whole budget (0: constant).
            policy_lr_decay_iters=0,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in (0, 1]) Polyak factor of the target critics.
            target_theta=0.005,
            # (float in (0, 1)) tau of the expectile V fits (eq. 5); 0.5 is the mean (SARSA), towards 1 the maximum.
            expectile=0.7,
            # (float >= 0) beta, the inverse temperature of the advantage weights exp(beta (Q - V)) (eq. 7).
            beta=3.0,
            # (float > 0) Largest advantage weight.
            max_weight=100.0,
        ),
    )
    action_space = 'continuous'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'continuous_qvac', ['tidal.models.qvac']

    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._optimizer_value = self.parts.optimizer('optimizer_value', adam(self._model.value.parameters(),
                                                                            learn.learning_rate_value))
        self._optimizer_q = self.parts.optimizer('optimizer_q', adam(self._model.critic.parameters(),
                                                                    learn.learning_rate_q))
        self._optimizer_policy = self.parts.optimizer('optimizer_policy', adam(self._model.actor_parameters(),
                                                                              learn.learning_rate_policy))
        self._target_critic = self.parts.target('target_critic', TargetNetwork(self._model.critic))
        self._updates = self.parts.counter('updates', UpdateCount())  # the clock of the actor's decay

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The three steps and the Polyak update; what they read of the networks before any of them steps (the
        target critics' Q(s, a), V(s') and the advantage) is taken here."""
        self._read_before_steps(batch)
        self._set_policy_lr()
        self._updates.value += 1
        stages = [LossStage(self._optimizer_value, self._value_loss, None, loss_key=None, norm_key=None),
                  LossStage(self._optimizer_q, self._critic_loss, None, loss_key=None, norm_key=None),
                  LossStage(self._optimizer_policy, self._policy_loss, None, loss_key=None, norm_key=None)]
        return LearnPlan(stages, info={'policy_lr': torch.tensor(self._optimizer_policy.param_groups[0]['lr'])},
                         after=lambda: self._target_critic.update(self._cfg.learn.target_theta))

    def _set_policy_lr(self) -> None:
        """The actor's learning rate at this update: lr (1 + cos(pi t / T)) / 2, t the updates made, up to T."""
        learn = self._cfg.learn
        if learn.policy_lr_decay_iters:
            progress = min(self._updates.value, learn.policy_lr_decay_iters) / learn.policy_lr_decay_iters
            self._optimizer_policy.param_groups[0]['lr'] = learn.learning_rate_policy * 0.5 * (1 + math.cos(math.pi * progress))

    @torch.no_grad()
    def _read_before_steps(self, batch: dict[str, Any]) -> None:
        """Q'(s, a), the target critics' minimum on the dataset's action; V(s'), which the critics' target reads;
        and the advantage Q'(s, a) - V(s) that weighs the actor's step: all before V's step, as CORL reads them."""
        batch['target_q'] = self._target_critic(batch['obs'], batch['action']).min(dim=0).values
        batch['next_value'] = self._model.value(batch['next_obs'])
        batch['advantage'] = batch['target_q'] - self._model.value(batch['obs'])

    def _value_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """eq. 5: the expectile loss of Q'(s, a) - V(s)."""
        value = self._model.value(batch['obs'])
        advantage = batch['target_q'] - value
        value_loss = expectile_loss(advantage, self._cfg.learn.expectile)
        return value_loss, {'value_loss': value_loss.detach(), 'value': value.detach().mean(),
                            'advantage': advantage.detach().mean()}

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """eq. 6: each critic's squared error to r + gamma (1 - terminated) V(s'), averaged over the critics."""
        q = self._model.critic(batch['obs'], batch['action'])
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        critic_losses, td_error = v_1step_td_error(q, batch['next_value'], batch['reward'], terminated,
                                                   self._cfg.learn.discount_factor)
        critic_loss = critic_losses.mean()
        return critic_loss, {'critic_loss': critic_loss.detach(), 'q_value': q.detach().mean()}

    def _policy_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """eq. 7: -exp(beta A) log pi(a | s) on the dataset's actions, the weights clipped at max_weight."""
        learn = self._cfg.learn
        weights = advantage_weights(batch['advantage'], learn.beta, learn.max_weight)
        mu, log_std = self._model.actor(batch['obs'])
        log_prob = gaussian_log_prob(torch.tanh(mu), log_std, batch['action'])
        policy_loss = -(weights * log_prob).mean()
        return policy_loss, {'policy_loss': policy_loss.detach(), 'advantage_weight': weights.mean()}

    def _monitor_vars_learn(self) -> list[str]:
        return ['value_loss', 'critic_loss', 'policy_loss', 'value', 'q_value', 'advantage', 'advantage_weight',
                'policy_lr']

    # ----- collect and eval ------------------------------------------------------------------
    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self._acting('collect').forward(obs)

    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        return self._acting('eval').forward(obs)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _acting(self, mode: str) -> ActingSteps:
        """A sample of the actor's Gaussian, clipped to the action range (collection; evaluation without
        eval.deterministic), or its mean tanh(mu)."""
        if mode == 'eval' and self._cfg.eval.deterministic:
            return ActingSteps(as_given, no_draw, act_squashed_mean, self._model)
        generator = self._eval_generator if mode == 'eval' else None
        return ActingSteps(as_given, self._draw, _act_sampled, self._model, generator)

    def _draw(self, obs: Any, generator: Optional[torch.Generator]) -> torch.Tensor:
        weight = next(self._model.parameters())
        return torch.randn((leading_dim(obs), self._model.action_dim), dtype=weight.dtype, device=weight.device,
                           generator=generator)

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        return {'action': torch.rand((leading_dim(obs), self._model.action_dim), device=self._device) * 2.0 - 1.0}

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """tanh(mu), as evaluation acts."""
        if action_mask:
            raise TidalError(f"policy '{self._cfg.type}' acts on continuous actions and takes no action mask")
        return ActingNetwork(TanhMean(self._model.actor_network()))


@POLICY_REGISTRY.register('iql')
class IQLPolicy(DatasetLearning, ImplicitQLearning):
    config = dict(type='iql', collect=dict(normalize_states=True))


@POLICY_REGISTRY.register('iql_online')
class IQLOnlinePolicy(OnlineContinuation, IQLPolicy):
    """IQL going on online from an `iql` run's checkpoint, the dataset in its replay (the paper's section 5.3)."""

    config = dict(type='iql_online')


# the acting steps (`ActingSteps`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_sampled(model: Any, obs: Any, noise: torch.Tensor) -> dict[str, torch.Tensor]:
    mu, log_std = model.actor(obs)
    return {'action': (torch.tanh(mu) + torch.exp(log_std) * noise).clamp(-1.0, 1.0)}
