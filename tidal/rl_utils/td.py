"""One-step temporal-difference errors.

Bootstrapping stops only at `terminated`; a truncated step (time limit) still bootstraps, because
the state it ends in has a value. Values may carry leading ensemble dims, value [..., B], and
trailing per-sample axes such as agents, value [..., B, *S]: a per-sample column [B] (a team reward,
an episode's terminated flag, an importance weight) then applies to every entry of its sample.
"""
from __future__ import annotations

from typing import Optional

import torch

from tidal.rl_utils.distributions import masked_logits


def per_sample(column: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`column` [B] viewed as [B, 1, ...] to broadcast over the trailing axes of `like` [B, *S]; a column
    that already has them ([B, *S]) or a `like` without them ([B]) leaves it as it is."""
    if column.dim() >= like.dim() or column.shape != like.shape[:column.dim()]:
        return column
    return column.reshape(*column.shape, *([1] * (like.dim() - column.dim())))


def td_target(reward: torch.Tensor, next_value: torch.Tensor, terminated: torch.Tensor,
              gamma: float | torch.Tensor) -> torch.Tensor:
    """r + gamma * (1 - terminated) * V(s'); `reward` and `terminated` are [B] or [B, *S] like V(s'), `gamma` a
    number or one discount per sample [B] (an n-step window's gamma^n, `nstep_return`)."""
    reward, terminated = per_sample(reward, next_value), per_sample(terminated, next_value)
    if isinstance(gamma, torch.Tensor):
        gamma = per_sample(gamma, next_value)
    return reward + gamma * (1.0 - terminated.to(reward.dtype)) * next_value


def nstep_return(rewards: torch.Tensor, length: torch.Tensor, gamma: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(sum_k gamma^k r_k, gamma^length) of each sample's n-step window: its rewards [B, n, *S], zero past its
    `length` [B], and the discount its bootstrap then takes.

    The window stops at its episode's end, so R + gamma^length (1 - terminated) V(s_end) is the target: the value
    of the last step's true next observation, none after a termination.
    """
    steps = torch.arange(rewards.shape[1], device=rewards.device, dtype=rewards.dtype)
    powers = (gamma ** steps).reshape(1, -1, *([1] * (rewards.dim() - 2)))
    return (rewards * powers).sum(dim=1), gamma ** length.to(rewards.dtype)


def v_1step_td_error(value: torch.Tensor, next_value: torch.Tensor, reward: torch.Tensor,
                     terminated: torch.Tensor, gamma: float | torch.Tensor,
                     weight: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Regress `value` [..., B, *S] to r + gamma (1 - terminated) next_value, with one target per
    sample (and agent), next_value [B, *S]: an ensemble's targets are reduced before (their minimum).

    Returns (loss [...], td_error [..., B, *S]): the loss is the (importance-)weighted mean squared
    error over the batch (and its trailing axes), one per leading index (one per critic of an
    ensemble); td_error is target - value, whose magnitude serves as a replay priority.
    """
    target = td_target(reward, next_value, terminated, gamma).detach()
    td_error = target - value
    squared = td_error.pow(2)
    if weight is not None:
        squared = squared * per_sample(weight, next_value)
    return squared.flatten(start_dim=squared.dim() - next_value.dim()).mean(dim=-1), td_error


def q_1step_td_error(q: torch.Tensor, next_q: torch.Tensor, action: torch.Tensor, next_action: torch.Tensor,
                     reward: torch.Tensor, terminated: torch.Tensor, gamma: float,
                     weight: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Regress Q(s, a) to r + gamma (1 - terminated) Q'(s', a'), with q [..., B, A] and next_q [B, A]."""
    return v_1step_td_error(gather_action(q, action), gather_action(next_q, next_action), reward, terminated,
                            gamma, weight)


def gather_action(q: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
    """Q(s, a) from Q(s, .): q [..., B, *S, A], action [B, *S] (int) -> [..., B, *S]; S may be empty
    (action [B], or [B, 1] as some envs give discrete actions)."""
    batch_shape = q.shape[:-1]
    if action.dim() > len(batch_shape) or action.shape != batch_shape[len(batch_shape) - action.dim():]:
        action = action.reshape(-1)
    index = action.long().reshape(*([1] * (q.dim() - 1 - action.dim())), *action.shape, 1)
    return q.gather(-1, index.expand(*batch_shape, 1)).squeeze(-1)


def soft_state_value(q: torch.Tensor, alpha: float, action_mask: Optional[torch.Tensor] = None,
                     policy_q: Optional[torch.Tensor] = None) -> torch.Tensor:
    """The soft value of a state from its action values q [..., A] -> [...], over the allowed actions (mask 1).

    V = alpha log sum_a exp(Q(a) / alpha): the value of the Boltzmann policy pi = softmax(Q / alpha) under Q,
    sum_a pi(a) (Q(a) - alpha log pi(a)), which tends to max_a Q(a) as alpha -> 0 (Haarnoja et al. 2017, arXiv
    1702.08165, theorem 1). With `policy_q` the policy is softmax(policy_q / alpha) instead (another network picks it,
    `q` values it, as double Q-learning splits the max); with policy_q = q both forms agree. logsumexp keeps the
    first finite for any finite q and alpha; disallowed actions get probability 0 and add nothing.
    """
    logits = masked_logits(q / alpha, action_mask)
    if policy_q is None:
        return alpha * torch.logsumexp(logits, dim=-1)
    log_pi = torch.log_softmax(masked_logits(policy_q / alpha, action_mask), dim=-1)
    return (log_pi.exp() * (q - alpha * log_pi)).sum(dim=-1)


def compare_through_return(reward: torch.Tensor, bootstrap_value: torch.Tensor, discount: torch.Tensor,
                           cut: torch.Tensor) -> torch.Tensor:
    """Multi-step returns along sequences [B, T] that bootstrap at the first cut.

    G_t = r_t + discount_t * (V_t if cut_t else G_{t+1}): step t's reward is followed by the next
    step's return for as long as no cut comes, then by `bootstrap_value` V_t, the value of the state
    step t leads to. The last step of a sequence always bootstraps. `discount` is gamma (1 - terminated).
    """
    returns = torch.empty_like(reward)
    following = bootstrap_value[:, -1]
    for t in reversed(range(reward.shape[1])):
        following = torch.where(cut[:, t], bootstrap_value[:, t], following)
        returns[:, t] = reward[:, t] + discount[:, t] * following
        following = returns[:, t]
    return returns
