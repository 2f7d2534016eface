"""Conservative Q-Learning on SAC, for learning from a fixed dataset.

Kumar, Zhou, Tucker and Levine 2020, "Conservative Q-Learning for Offline Reinforcement Learning" (arXiv
2006.04779), the CQL(H) variant: each critic's SAC loss gains alpha' (T logsumexp_a Q(s, a) / T - Q(s, a_data))
(eq. 4), pushing Q down on every action and back up on the dataset's, so the actor cannot exploit values of actions
the data never tried. The log-sum-exp is estimated by importance sampling (appendix F) from M uniform actions, M
actions of the current policy at s and M of it at s', each weighted by its proposal's density. As in the paper's
locomotion runs (and d3rlpy's), the critics' target is Q'(s', a') without SAC's entropy term
(`learn.backup_entropy`), and the actor learns more slowly than the critics. The Lagrangian form that tunes alpha'
to a target gap is not built.
"""
from __future__ import annotations

import math
from typing import Any

import torch

from tidal.policies.offline_common import DatasetLearning, OnlineContinuation
from tidal.policies.sac import SACPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import cql_penalty, tanh_gaussian_sample


class ConservativeSAC(SACPolicy):
    """SAC with CQL's penalty in the critics' loss; `CQLPolicy` adds the dataset."""

    config = dict(
        learn=dict(
            learning_rate_q=3e-4,
            learning_rate_policy=1e-4,
            learning_rate_alpha=1e-4,
            # SAC's temperature starts at 1, as in the paper's code, CORL and d3rlpy
            alpha=1.0,
            # (float >= 0) alpha', the weight of the conservative penalty (eq. 4).
            cql_weight=5.0,
            # (int > 0) M: actions drawn per state from each of the three proposals (uniform, pi at s, pi at s').
            num_action_samples=10,
            # (float > 0) T, the temperature of the log-sum-exp over actions.
            cql_temperature=1.0,
            # (bool) Keep SAC's entropy term -alpha log pi(a' | s') in the critics' target (False: Q'(s', a')).
            backup_entropy=False,
        ),
    )

    def _draw_update_noise(self, batch: dict[str, Any]) -> None:
        """SAC's draws, then the penalty's: M uniform actions per state and the noise of M policy samples at s and
        at s', each [M, B, A]."""
        super()._draw_update_noise(batch)
        shape = (self._cfg.learn.num_action_samples, batch['reward'].shape[0], self._model.action_dim)
        batch['cql_uniform'] = torch.rand(shape, device=self._device) * 2.0 - 1.0
        batch['cql_noise'] = torch.randn(shape, device=self._device)
        batch['cql_next_noise'] = torch.randn(shape, device=self._device)

    def _next_value(self, next_q: torch.Tensor, next_log_prob: torch.Tensor) -> torch.Tensor:
        return super()._next_value(next_q, next_log_prob) if self._cfg.learn.backup_entropy else next_q

    def _critic_loss(self, batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """SAC's J_Q per critic plus alpha' times its conservative penalty (eq. 4)."""
        critic_losses, td_error, q, next_value = self._critic_terms(batch)
        penalty = self._conservative_penalty(batch, q)
        info = self._critic_info(critic_losses, td_error, q, next_value)
        info['cql_penalty'] = penalty.detach().mean()
        return critic_losses.sum() + self._cfg.learn.cql_weight * penalty.sum(), info

    def _conservative_penalty(self, batch: dict[str, Any], q_data: torch.Tensor) -> torch.Tensor:
        """`cql_penalty` of each critic [E] on the 3M proposed actions of every state of the batch."""
        obs, uniform = batch['obs'], batch['cql_uniform']
        samples, rows, action_dim = uniform.shape
        with torch.no_grad():
            policy_action, policy_log_prob = self._policy_samples(obs, batch['cql_noise'])
            next_action, next_log_prob = self._policy_samples(batch['next_obs'], batch['cql_next_noise'])
        actions = torch.cat([uniform, policy_action, next_action]).reshape(3 * samples * rows, action_dim)
        repeated = obs.unsqueeze(0).expand(3 * samples, *obs.shape).reshape(3 * samples * rows, -1)
        q_sampled = self._model.critic(repeated, actions).reshape(q_data.shape[0], 3 * samples, rows)
        uniform_log_density = torch.full((samples, rows), -action_dim * math.log(2.0), device=obs.device)
        log_density = torch.cat([uniform_log_density, policy_log_prob, next_log_prob])
        return cql_penalty(q_sampled, log_density, q_data, self._cfg.learn.cql_temperature)

    def _policy_samples(self, obs: torch.Tensor, noise: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """M actions of the current actor per state of `obs` [B, obs] from `noise` [M, B, A], and their
        log-probabilities [M, B]: the actor runs once per state, its Gaussian broadcast over the M draws."""
        mu, log_std = self._model.actor(obs)
        return tanh_gaussian_sample(mu, log_std, noise=noise)

    def _monitor_vars_learn(self) -> list[str]:
        return [*super()._monitor_vars_learn(), 'cql_penalty']


@POLICY_REGISTRY.register('cql')
class CQLPolicy(DatasetLearning, ConservativeSAC):
    config = dict(type='cql', collect=dict(normalize_states=True))


@POLICY_REGISTRY.register('cql_online')
class CQLOnlinePolicy(OnlineContinuation, CQLPolicy):
    """CQL going on online from a `cql` run's checkpoint, the dataset in its replay."""

    config = dict(type='cql_online')
