"""Soft Actor-Critic for discrete actions.

Christodoulou 2019, "Soft Actor-Critic for Discrete Action Settings" (arXiv 1910.07207). With a
finite action set the policy's expectations are exact sums over actions, so neither the critic
target nor the policy loss needs sampling or the reparameterization trick; Q outputs one value per
action. Observations may be a dict with 'observation' and 'action_mask' (1 = allowed).

Collection samples the actor, optionally epsilon-greedy as DI-engine's discrete SAC always is
(`other.eps`): with probability epsilon, falling with the env steps collected, a uniformly random
allowed action instead; off by default, since the actor's entropy bonus already explores.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import torch
import torch.nn.functional as F

from tidal.base.errors import ConfigError
from tidal.base.modes import ActingSteps, Timestep, no_draw
from tidal.base.nest import leading_dim
from tidal.base.stages import LearnPlan
from tidal.policies.common import (EpsilonClock, bootstrap_mask, sample_categorical, sample_weight, split_action_mask,
                                   td_reward)
from tidal.models.acting import ActingNetwork, MaskedArgmax
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import gather_action, masked_logits, v_1step_td_error


@POLICY_REGISTRY.register('discrete_sac')
class DiscreteSACPolicy(SACPolicy):
    config = dict(
        type='discrete_sac',
        learn=dict(
            # (float or None) Target entropy for auto alpha; None means 0.98 * log(action_dim), the paper's
            # choice (section 4), with action_dim per state the actions its action_mask allows (a set
            # value applies to every state as it is). DI-engine defaults to -action_dim, which is below
            # the minimum entropy of any categorical distribution, so alpha would only ever shrink.
            target_entropy=None,
            # (float >= 0) Half-width of the uniform init of the logits layer (0: keep default init).
            init_w=0.0,
        ),
        other=dict(
            eps=dict(
                # (str in {'linear', 'exp'} or None) Epsilon-greedy collection: each env (each agent, under
                # multi_agent) takes a uniformly random allowed action with probability epsilon, else the
                # actor's sample. epsilon falls from start to end with the env steps collected (warm-up
                # included): 'linear' reaches end at `decay` steps, 'exp' is end + (start - end) e^(-steps/decay).
                # None: off, actions are the actor's samples. DI-engine's discrete SAC always needs it (its
                # MPE configs: 'linear', 1 -> 0.05 over 100k). Under a Ray collector each worker counts only
                # its own envs' steps.
                type=None,
                # (float in [0, 1]) epsilon at env step 0.
                start=1.0,
                # (float in [0, 1]) epsilon once decayed.
                end=0.05,
                # (int > 0) Env steps (over all collector envs) of the decay, see type.
                decay=100_000,
            ),
        ),
    )
    action_space = 'discrete'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        if cfg.get('multi_agent'):
            return 'discrete_maqac', ['tidal.models.maqac']
        return 'discrete_qac', ['tidal.models.qac']

    def _default_target_entropy(self) -> float:
        return 0.98 * math.log(self._model.action_dim)

    def _configured_target_entropy(self, action_dim: int, default: float) -> float:
        if isinstance(self._cfg.learn.target_entropy, str):
            raise ConfigError(f"policy.learn.target_entropy {self._cfg.learn.target_entropy!r} is per dimension of "
                              f"continuous actions; '{self._cfg.type}' takes a number or None")
        return super()._configured_target_entropy(action_dim, default)

    def _target_entropy_of(self, obs: Any) -> float | torch.Tensor:
        """The target entropy of a batch: a configured one as given, else 0.98 * log(legal actions) per
        state. Over all actions it would be out of reach whenever the mask allows fewer (a state with one
        legal action has entropy 0), and alpha would grow without bound."""
        configured = self._cfg.learn.target_entropy
        if configured is not None:
            return float(configured)
        _, mask = split_action_mask(obs)
        if mask is None:
            return self._default_target_entropy()
        return 0.98 * mask.bool().sum(dim=-1).clamp(min=1).float().log()

    def _policy(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(observation, probabilities, log-probabilities) of the actor on a batch."""
        observation, mask = split_action_mask(obs)
        log_prob = F.log_softmax(masked_logits(self._model.actor(observation), mask), dim=-1)
        return observation, log_prob.exp(), log_prob

    def _learn_plan(self, batch: dict[str, Any]) -> LearnPlan:
        """The critic step, then one step of the actor and the temperature, then the Polyak update of the target
        critics; the expectations over actions are exact, so nothing is drawn."""
        self._normalize_reward(batch)
        return LearnPlan([self._critic_stage(), self._policy_stage()],
                         after=lambda: self._target_critic.update(self._target_theta))

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The critic loss on the taken actions (eq. 2) against the soft value of s' as an exact expectation over
        actions (eq. 10)."""
        action = batch['action']
        reward, discount = td_reward(batch, self._gamma)  # one step's, or an n-step window's (policy.nstep)
        terminated = bootstrap_mask(batch, self._cfg.learn.ignore_done)
        weight = sample_weight(batch, self._cfg.priority_IS_weight)
        alpha = self._temperature.value
        with torch.no_grad():
            next_observation, next_prob, next_log_prob = self._policy(batch['next_obs'])
            next_q = self._target_critic(next_observation).min(dim=0).values
            next_value = (next_prob * (next_q - alpha * next_log_prob)).sum(dim=-1)
        observation, _ = split_action_mask(batch['obs'])
        q = gather_action(self._model.critic(observation), action)
        critic_losses, td_error = v_1step_td_error(q, next_value, reward, terminated, discount, weight)
        return critic_losses.sum(), self._critic_info(critic_losses, td_error, q, next_value)

    def _policy_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """KL to the soft-Q Boltzmann distribution of the updated critics, summed over actions (eq. 12), plus,
        with auto alpha, the temperature loss with the exact expected log-probability (eq. 11), towards a
        target entropy the actions each state allows can reach."""
        alpha = self._temperature.value
        observation, prob, log_prob = self._policy(batch['obs'])
        with torch.no_grad():
            min_q = self._model.critic(observation).min(dim=0).values
        policy_loss = (prob * (alpha * log_prob - min_q)).sum(dim=-1).mean()
        expected_log_prob = (prob * log_prob).sum(dim=-1)
        values = dict(policy_loss=policy_loss.detach(), entropy=-expected_log_prob.detach().mean(), alpha=alpha)
        if not self._temperature.auto:
            return policy_loss, values
        alpha_loss = self._temperature.loss(expected_log_prob, self._target_entropy_of(batch['obs']))
        values['alpha_loss'] = alpha_loss.detach()
        return policy_loss + alpha_loss, values

    # ----- collect and eval ------------------------------------------------------------------
    def _init_collect(self) -> None:
        self._epsilon_clock = EpsilonClock(self._cfg.other.eps)

    def epsilon(self) -> float:
        """The epsilon of epsilon-greedy collection now (0 when other.eps.type is None)."""
        return self._epsilon_clock.epsilon()

    @torch.no_grad()
    def _forward_collect(self, obs: Any, **kwargs: Any) -> dict[str, torch.Tensor]:
        _, prob, _ = self._policy(obs)
        action = sample_categorical(prob)
        if self._cfg.other.eps.type is not None:
            # one coin per env (and agent): where it falls below epsilon, a uniform allowed action
            explore = torch.rand(action.shape, device=action.device) < self.epsilon()
            action = torch.where(explore, self._random_action(obs)['action'], action)
        return {'action': action}

    def _process_transition(self, obs: Any, policy_output: dict[str, torch.Tensor],
                            timestep: Timestep) -> dict[str, Any]:
        self._epsilon_clock.tick(int(timestep.terminated.shape[0]))
        return super()._process_transition(obs, policy_output, timestep)

    def _state_dict_collect(self) -> dict[str, Any]:
        return {**super()._state_dict_collect(), **self._epsilon_clock.state_dict()}

    def _load_state_dict_collect(self, state: dict[str, Any]) -> None:
        super()._load_state_dict_collect(state)
        self._epsilon_clock.load_state_dict(state)

    def _random_action(self, obs: Any) -> dict[str, torch.Tensor]:
        _, mask = split_action_mask(obs)
        if mask is None:
            mask = torch.ones(leading_dim(obs), *self._agent_axes(), self._model.action_dim, device=self._device)
        return {'action': sample_categorical(mask.float())}

    @torch.no_grad()
    def _forward_eval(self, obs: Any) -> dict[str, torch.Tensor]:
        """The most likely allowed action (eval.deterministic), else one sampled as collection does."""
        if self._cfg.eval.deterministic:
            return self._greedy_steps().forward(obs)
        _, prob, _ = self._policy(obs)
        return {'action': sample_categorical(prob, self._eval_generator)}

    def _acting_steps(self, mode: str) -> Optional[ActingSteps]:
        """The greedy evaluation only: sampling draws with `torch.multinomial`, whose numbers cannot be drawn
        before the probabilities are known, so a seed group samples per seed."""
        return self._greedy_steps() if mode == 'eval' and self._cfg.eval.deterministic else None

    def _greedy_steps(self) -> ActingSteps:
        return ActingSteps(split_action_mask, no_draw, _act_greedy, self._model)

    def export_actor(self, action_mask: bool = False) -> ActingNetwork:
        """The argmax of the actor's masked logits, as eval.deterministic acts; under multi_agent on
        `agent_state` [B, agents, obs] (and the mask [B, agents, actions])."""
        observation = 'agent_state' if self._cfg.get('multi_agent', False) else 'obs'
        return ActingNetwork(MaskedArgmax(self._model.actor_network()),
                             input_names=(observation, 'action_mask') if action_mask else (observation,))


@torch.no_grad()
def _act_greedy(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: None) -> dict[str, torch.Tensor]:
    """The most likely allowed action (`ActingSteps.act` of the greedy evaluation)."""
    observation, mask = inputs
    return {'action': masked_logits(model.actor(observation), mask).argmax(dim=-1)}
