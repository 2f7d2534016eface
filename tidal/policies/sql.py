"""Soft Q-learning, with discrete actions.

Haarnoja et al. 2017, "Reinforcement Learning with Deep Energy-Based Policies" (arXiv 1702.08165), as DI-engine's
discrete `sql` runs it: DQN whose bootstrap is the soft value alpha log sum_a' exp(Q_target(s', a') / alpha) of the
next state instead of its max, and whose collection samples the Boltzmann policy softmax(Q(s, .) / alpha) (both
from the paper's theorem 1), with epsilon-greedy's uniform random actions beside it. Evaluation is greedy.
Everything else (target network, n-step windows, prioritized replay, action masks) is DQN's.
"""
from __future__ import annotations

import functools
from typing import Any, Optional

import torch

from tidal.base.modes import ActingSteps
from tidal.base.nest import leading_dim
from tidal.policies.common import split_action_mask
from tidal.policies.dqn import DQNPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import gumbel_max_sample, masked_logits
from tidal.rl_utils.td import soft_state_value


@POLICY_REGISTRY.register('sql')
class SQLPolicy(DQNPolicy):
    config = dict(
        type='sql',
        learn=dict(
            # (float > 0) Temperature alpha: the entropy's weight in the soft value and the Boltzmann policy
            # softmax(Q / alpha) that collection samples; towards 0 both become DQN's max and greedy action.
            alpha=0.1,
            # (bool) Double soft Q: the online network's Boltzmann policy weighs the target network's values,
            # sum_a pi(a) (Q_target(s', a) - alpha log pi(a)); False: the target network's own soft value
            # alpha logsumexp(Q_target(s', .) / alpha), as DI-engine's SQL.
            double_q=False,
        ),
    )

    # ----- learn mode ------------------------------------------------------------------------
    def _next_value(self, next_observation: Any, next_mask: Optional[torch.Tensor]) -> torch.Tensor:
        """The soft value of s' (theorem 1) over its allowed actions, from the target network."""
        next_q = self._target(next_observation)
        policy_q = self._model(next_observation) if self._cfg.learn.double_q else None
        return soft_state_value(next_q, self._cfg.learn.alpha, next_mask, policy_q)

    # ----- collect and eval ------------------------------------------------------------------
    def _acting(self, mode: str) -> ActingSteps:
        """Collection samples softmax(Q / alpha) over the allowed actions, or with probability epsilon a uniform
        allowed action; evaluation is greedy (eval.deterministic), else it samples softmax(Q / alpha)."""
        sample = functools.partial(_act_boltzmann, alpha=self._cfg.learn.alpha)
        if mode == 'collect':
            return ActingSteps(split_action_mask, self._draw_collect, functools.partial(_act_exploring, sample),
                               self._model)
        if self._cfg.eval.deterministic:
            return super()._acting(mode)
        return ActingSteps(split_action_mask, self._draw_uniform, sample, self._model, self._eval_generator)

    def _draw_collect(self, inputs: tuple[Any, Optional[torch.Tensor]], generator: Optional[torch.Generator]
                      ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(which envs explore [B], their uniform allowed actions [B], the Boltzmann sample's uniforms [B, A])."""
        explore, random_action = self._draw_exploration(inputs, generator)
        return explore, random_action, self._draw_uniform(inputs, generator)

    def _draw_uniform(self, inputs: tuple[Any, Optional[torch.Tensor]],
                      generator: Optional[torch.Generator]) -> torch.Tensor:
        """Uniform numbers [B, A] that turn into a Boltzmann sample's Gumbel noise."""
        rows = leading_dim(inputs[0])
        return torch.rand(rows, self._model.action_dim, device=self._device, generator=generator)


# the acting steps of SQL's modes (`ActingSteps`): module-level, so that they read nothing but the model and alpha
@torch.no_grad()
def _act_boltzmann(model: Any, inputs: tuple[Any, Optional[torch.Tensor]], noise: torch.Tensor,
                   alpha: float) -> dict[str, torch.Tensor]:
    """An allowed action sampled from softmax(Q / alpha) (theorem 1), by the Gumbel-max trick on `noise`."""
    observation, mask = inputs
    return {'action': gumbel_max_sample(masked_logits(model(observation) / alpha, mask), uniform=noise)}


@torch.no_grad()
def _act_exploring(sample: Any, model: Any, inputs: tuple[Any, Optional[torch.Tensor]],
                   noise: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> dict[str, torch.Tensor]:
    explore, random_action, uniform = noise
    action = sample(model, inputs, uniform)['action']
    return {'action': torch.where(explore, random_action, action)}
