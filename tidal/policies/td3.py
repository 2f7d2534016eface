"""DDPG and TD3: a deterministic actor trained through its critic's gradient, for continuous actions.

DDPG (Lillicrap et al. 2016, "Continuous control with deep reinforcement learning", arXiv 1509.02971) regresses a
critic Q(s, a) to r + gamma Q'(s', mu'(s')) and moves the actor mu up the critic's gradient, -Q(s, mu(s)), with
Polyak-averaged copies of both; collection adds Gaussian noise to mu(s). TD3 (Fujimoto et al. 2018, "Addressing
Function Approximation Error in Actor-Critic Methods", arXiv 1802.09477) adds three things, each a config key:
twin critics whose minimum is the target (`model.twin_critic`), clipped noise on the target's action
(`learn.noise`, target policy smoothing) and one actor step per `learn.actor_update_freq` critic steps. As in
DI-engine, `td3` is `ddpg` with those three on, and the target networks follow after every critic step; the paper
and Stable-Baselines3 move them with the actor instead (`learn.target_update='with_actor'`).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import torch

from tidal.base.defaults import FreeDict
from tidal.base.errors import TidalError
from tidal.base.modes import ActingSteps, as_given, no_draw
from tidal.base.nest import leading_dim
from tidal.base.stages import LearnPlan, LossStage
from tidal.models import TargetNetwork
from tidal.models.acting import ActingNetwork
from tidal.policies.base import Policy
from tidal.policies.common import UpdateCount, adam, bootstrap_mask, sample_weight, td_reward
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import noisy_action, v_1step_td_error


@POLICY_REGISTRY.register('ddpg')
class DDPGPolicy(Policy):
    config = dict(
        type='ddpg',
        random_collect_size=25000,
        # (int in [1, 1000]) Rewards summed before the critics' target bootstraps (n-step returns); a window never
        # crosses an episode's end.
        nstep=1,
        model=FreeDict(
            # (bool) Two Q critics and the minimum of their values as the target (TD3's clipped double Q).
            twin_critic=False,
        ),
        learn=dict(
            # (float > 0) Adam learning rate of the actor.
            learning_rate_actor=1e-3,
            # (float > 0) Adam learning rate of the critics.
            learning_rate_critic=1e-3,
            # (float in (0, 1]) Polyak factor of the target actor and critics.
            target_theta=0.005,
            # (str in {'critic_step', 'with_actor'}) When the targets move: after every critic step (DI-engine), or
            # only after the updates that step the actor too (the TD3 paper's delayed update, Stable-Baselines3).
            target_update='critic_step',
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (int > 0) Critic steps per actor step (TD3's delayed policy update: 2).
            actor_update_freq=1,
            # (bool) Target policy smoothing: add clipped Gaussian noise to the target actor's action.
            noise=False,
            # (float >= 0) Standard deviation of the target policy smoothing noise, in the policy's [-1, 1] units.
            noise_sigma=0.2,
            # The range the smoothing noise is clipped to before it is added.
            noise_range=dict(
                # (float) Lowest noise added.
                min=-0.5,
                # (float) Highest noise added.
                max=0.5,
            ),
            # (float >= 0) Half-width of the uniform init of the actor's output layer (0: keep default init).
            init_w=0.0,
        ),
        collect=dict(
            # (float >= 0) Standard deviation of the Gaussian noise added to each collected action (in [-1, 1]
            # units; the noisy action is clipped to the range).
            noise_sigma=0.1,
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=100_000)),
    )
    action_space = 'continuous'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'deterministic_qac', ['tidal.models.qac']

    # ----- learn mode ------------------------------------------------------------------------
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        self._gamma = learn.discount_factor
        if learn.init_w:
            self._model.actor_head.init_uniform(learn.init_w)
        self._optimizer_critic = self.parts.optimizer('optimizer_critic', adam(self._model.critic.parameters(),
                                                                              learn.learning_rate_critic))
        self._optimizer_actor = self.parts.optimizer('optimizer_actor', adam(self._model.actor_parameters(),
                                                                            learn.learning_rate_actor))
        # the target actor and critics, one Polyak update
        self._target = self.parts.target('target', TargetNetwork(self._model))
        self._updates = self.parts.counter('updates', UpdateCount())  # critic steps: the delayed actor's clock
        # what the latest actor step reported, by name (0 before the first)
        self._last_actor_values = {name: torch.zeros((), device=self._device) for name in self._actor_monitors()}

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """1. the critic step, 2. every actor_update_freq-th update an actor step on the critics held constant,
        3. the Polyak update of the targets; the smoothing noise of the target's action is drawn here."""
        learn = self._cfg.learn
        if learn.noise:
            action = batch['action']
            batch['target_noise'] = torch.randn(action.shape, dtype=action.dtype, device=action.device) \
                * learn.noise_sigma
        stages = [LossStage(self._optimizer_critic, self._critic_loss, None, loss_key=None, norm_key=None)]
        self._updates.value += 1
        actor_step = self._updates.value % learn.actor_update_freq == 0
        if actor_step:
            stages.append(LossStage(self._optimizer_actor, self._actor_loss, None, loss_key=None, norm_key=None,
                                    frozen=(self._model.critic,), seen=self._keep_actor_values))
        move_targets = actor_step or learn.target_update == 'critic_step'
        # an update without an actor step reports the latest actor step's values (0 before the first)
        return LearnPlan(stages, info=dict(self._last_actor_values),
                         after=(lambda: self._target.update(learn.target_theta)) if move_targets else None)

    def _actor_monitors(self) -> list[str]:
        """The values every actor step reports, which the updates between actor steps repeat."""
        return ['actor_loss']

    def _keep_actor_values(self, values: dict[str, torch.Tensor]) -> None:
        self._last_actor_values = {name: values[name] for name in self._last_actor_values}

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Each critic's squared error to y = R + gamma^n (1 - terminated) min_i Q'_i(s', a'), a' the target
        actor's action at s' (plus clipped noise, TD3)."""
        reward, discount = td_reward(batch, self._gamma)  # one step's, or an n-step window's (policy.nstep)
        with torch.no_grad():
            next_obs = batch['next_obs']
            next_action = self._target.actor(next_obs)
            if 'target_noise' in batch:
                noise_range = self._cfg.learn.noise_range
                next_action = noisy_action(next_action, batch['target_noise'], (noise_range.min, noise_range.max))
            next_q = self._next_q(batch, next_action)
        q = self._model.critic(batch['obs'], batch['action'])
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        critic_losses, td_error = v_1step_td_error(q, next_q, reward, terminated, discount,
                                                   sample_weight(batch, self._cfg.priority_IS_weight))
        info = dict(critic_loss=critic_losses[0].detach(), q_value=q.detach().mean(),
                    target_q_value=(td_error + q).detach().mean(), td_error=td_error.detach().abs().mean(),
                    priority=td_error.detach().abs().mean(dim=0))
        if len(critic_losses) > 1:
            info['twin_critic_loss'] = critic_losses[1].detach()
        return critic_losses.sum(), info

    def _next_q(self, batch: dict[str, Any], next_action: torch.Tensor) -> torch.Tensor:
        """The value the target bootstraps from: min_i Q'_i(s', a')."""
        return self._target.critic(batch['next_obs'], next_action).min(dim=0).values

    def _actor_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """-Q_1(s, mu(s)): the first critic's value of the actor's action (the deterministic policy gradient)."""
        obs = batch['obs']
        actor_loss = -self._model.critic(obs, self._model.actor(obs))[0].mean()
        return actor_loss, {'actor_loss': actor_loss.detach()}

    def _monitor_vars_learn(self) -> list[str]:
        names = ['critic_loss', *self._actor_monitors(), 'q_value', 'target_q_value', 'td_error']
        return names + ['twin_critic_loss'] if self._cfg.model.get('twin_critic', False) else names

    # ----- collect and eval ------------------------------------------------------------------
    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        return self._acting('collect').forward(obs)

    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        return self._acting('eval').forward(obs)

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        return self._acting(mode)

    def _acting(self, mode: str) -> ActingSteps:
        """mu(s) plus Gaussian noise (collection; evaluation without eval.deterministic, from the eval
        generator), or mu(s) itself."""
        if mode == 'collect':
            return ActingSteps(as_given, self._draw, _act_noisy, self._model)
        if self._cfg.eval.deterministic:
            return ActingSteps(as_given, no_draw, _act_deterministic, self._model)
        return ActingSteps(as_given, self._draw, _act_noisy, self._model, self._eval_generator)

    def _draw(self, obs: Any, generator: Optional[torch.Generator]) -> torch.Tensor:
        """The exploration noise of one action per row of `obs`, collect.noise_sigma times a standard normal."""
        weight = next(self._model.parameters())
        noise = torch.randn((leading_dim(obs), self._model.action_dim), dtype=weight.dtype, device=weight.device,
                            generator=generator)
        return noise * self._cfg.collect.noise_sigma

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        return {'action': torch.rand((leading_dim(obs), self._model.action_dim), device=self._device) * 2.0 - 1.0}

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """mu(s), as evaluation acts."""
        if action_mask:
            raise TidalError(f"policy '{self._cfg.type}' acts on continuous actions and takes no action mask")
        return ActingNetwork(self._model.actor_network())


@POLICY_REGISTRY.register('td3')
class TD3Policy(DDPGPolicy):
    config = dict(
        type='td3',
        model=FreeDict(twin_critic=True),
        learn=dict(actor_update_freq=2, noise=True),
    )


# the acting steps of the modes (`ActingSteps`): module-level, so that they read nothing but the model
@torch.no_grad()
def _act_deterministic(model: Any, obs: Any, noise: None) -> dict[str, torch.Tensor]:
    return {'action': model.actor(obs)}


@torch.no_grad()
def _act_noisy(model: Any, obs: Any, noise: torch.Tensor) -> dict[str, torch.Tensor]:
    return {'action': noisy_action(model.actor(obs), noise)}
