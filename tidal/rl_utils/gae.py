"""Generalized advantage estimation (Schulman et al. 2016, arXiv 1506.02438).

Two flags per step, because they mean different things: `terminated` (the MDP ended, V(s') = 0)
stops the bootstrap, and `done = terminated | truncated` (the episode ended, whatever the reason)
stops the lambda-recursion, since the next row belongs to a new episode. A truncated step therefore
still bootstraps from V(final observation), which the caller puts in `next_value`.
"""
from __future__ import annotations

import torch


@torch.no_grad()
def gae(reward: torch.Tensor, value: torch.Tensor, next_value: torch.Tensor, terminated: torch.Tensor,
        done: torch.Tensor, gamma: float, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns), float32 [T, N], from rollouts of T steps in N envs.

    A_t = delta_t + gamma lam (1 - done_t) A_{t+1}, with delta_t = r_t + gamma (1 - terminated_t)
    V(s_{t+1}) - V_t, and returns = A + V: the TD(lambda) target the value function regresses to.
    lam = 1 gives discounted returns minus V, lam = 0 the one-step TD error. Both outputs are
    targets, so no gradient flows through them.
    """
    reward, value, next_value = (x.to(torch.float32) for x in (reward, value, next_value))
    carry = gamma * lam * (1.0 - done.to(torch.float32))
    # next_value is selected away (not multiplied by 0) where terminated, so garbage there cannot leak
    bootstrapped = torch.where(terminated.bool(), torch.zeros_like(next_value), gamma * next_value)
    delta = reward + bootstrapped - value  # TD residual delta_t, PPO eq. 12
    advantage = torch.empty_like(delta)
    following = torch.zeros_like(delta[0])
    for t in reversed(range(delta.shape[0])):
        following = delta[t] + carry[t] * following  # GAE eq. 16 (PPO eq. 11) as a backward recursion
        advantage[t] = following
    return advantage, advantage + value
