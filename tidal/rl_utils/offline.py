"""The losses of learning from a fixed dataset, each as its paper writes it; they know no policy."""
from __future__ import annotations

import math
from typing import Optional

import torch

from tidal.rl_utils.distributions import masked_logits
from tidal.rl_utils.td import gather_action


def expectile_loss(diff: torch.Tensor, expectile: float) -> torch.Tensor:
    """IQL's L_2^tau (Kostrikov et al. 2021, eq. 5): mean of |tau - 1(u < 0)| u^2 over u = `diff`, which fits an
    upper expectile of the target for tau > 0.5."""
    weight = torch.where(diff < 0, 1.0 - expectile, expectile)
    return (weight * diff.pow(2)).mean()


def advantage_weights(advantage: torch.Tensor, beta: float, max_weight: float) -> torch.Tensor:
    """exp(beta A) clipped at `max_weight`: the advantage-weighted regression weights of IQL's policy extraction
    (eq. 7) and AWAC."""
    return torch.exp(beta * advantage).clamp(max=max_weight)


def gaussian_log_prob(mean: torch.Tensor, log_std: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """log N(action; mean, exp(log_std)^2) summed over the action's last axis (a diagonal Gaussian)."""
    z = (action - mean) * torch.exp(-log_std)
    return (-0.5 * z.pow(2) - log_std - 0.5 * math.log(2 * math.pi)).sum(dim=-1)


def td3_bc_actor_loss(q: torch.Tensor, action: torch.Tensor, data_action: torch.Tensor,
                      alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
    """TD3+BC's actor loss (Fujimoto and Gu 2021, eq. 3 and section 5): -lambda mean Q(s, pi(s)) + mean (pi(s) -
    a)^2, with lambda = alpha / mean |Q| over the batch, held constant. Returns (loss, lambda)."""
    lmbda = alpha / q.abs().mean().detach()
    return -lmbda * q.mean() + (action - data_action).pow(2).mean(), lmbda


def cql_penalty(q_sampled: torch.Tensor, log_density: torch.Tensor, q_data: torch.Tensor,
                temperature: float) -> torch.Tensor:
    """CQL(H)'s regulariser (Kumar et al. 2020, eq. 4), its log-sum-exp over actions estimated by importance sampling
    (appendix F): per critic, the batch mean of T logsumexp_i((Q(s, a_i) - log mu(a_i | s)) / T) - Q(s, a), a the
    dataset's action. `q_sampled` [E, M, B] are the critics' values of M proposed actions per state, `log_density`
    [M, B] their proposals' log densities, `q_data` [E, B]; returns [E]."""
    soft_max = temperature * torch.logsumexp((q_sampled - log_density) / temperature, dim=1)
    return (soft_max - q_data).mean(dim=-1)


def discrete_cql_penalty(q: torch.Tensor, action: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    """CQL(H)'s regulariser for discrete actions (Kumar et al. 2020, eq. 4, its log-sum-exp exact): the batch mean of
    logsumexp_a Q(s, a) - Q(s, a_data), over the actions `mask` allows (1 = allowed; None: all). `q` is [B, A]."""
    return (torch.logsumexp(masked_logits(q, mask), dim=-1) - gather_action(q, action)).mean()


def rebrac_actor_loss(q: torch.Tensor, action: torch.Tensor, data_action: torch.Tensor, bc_coef: float,
                      normalize_q: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """ReBRAC's actor loss (Tarasov et al. 2023, eq. 2): mean over the batch of beta_1 ||pi(s) - a||^2 - lambda
    Q(s, pi(s)), the squared error summed over the action, lambda = 1 / mean |Q| held constant (1 unless
    `normalize_q`). Returns (loss, the squared errors [B])."""
    penalty = (action - data_action).pow(2).sum(dim=-1)
    lmbda = 1.0 / q.abs().mean().detach() if normalize_q else torch.ones((), device=q.device)
    return (bc_coef * penalty - lmbda * q).mean(), penalty
