"""V-trace off-policy value targets (Espeholt et al. 2018, "IMPALA", arXiv 1802.01561, eqs. 1-4).

Rollouts come from a behaviour policy mu, targets are for the policy pi that learns: each TD residual is
weighted by a truncated importance ratio rho_t = min(rho_bar, pi/mu), and the traces that carry it back are
c_t = lambda min(c_bar, pi/mu). With pi = mu and c_bar >= 1 they are the TD(lambda) returns of GAE.
The flags mean what they mean in `gae`: `terminated` stops the bootstrap (V(x_{t+1}) = 0), `done =
terminated | truncated` stops the traces, and `next_value` is V(x_{t+1}): the next row's value while the episode
goes on, the value to bootstrap from where the next row is not the episode's next step (a truncation, the
rollout's last step).
"""
from __future__ import annotations

import torch


@torch.no_grad()
def vtrace(reward: torch.Tensor, value: torch.Tensor, next_value: torch.Tensor, log_rho: torch.Tensor,
           terminated: torch.Tensor, done: torch.Tensor, gamma: float, lam: float, rho_clip: float = 1.0,
           c_clip: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    """(value targets v_s, policy-gradient advantages), float32 [T, N], from rollouts of T steps in N envs.

    v_s - V(x_s) = rho_s delta_s + gamma c_s (1 - done_s) (v_{s+1} - V(x_{s+1})), with delta_s = r_s +
    gamma (1 - terminated_s) V(x_{s+1}) - V(x_s) (eq. 1 as a backward recursion, remark 1), and the advantage
    rho_s (r_s + gamma (1 - terminated_s) v_{s+1} - V(x_s)) (eq. 4), where v_{s+1} is `next_value` when the
    episode or the rollout ends at s. `log_rho` is log pi(a_s|x_s) - log mu(a_s|x_s). Both outputs are
    targets, so no gradient flows through them.
    """
    reward, value, next_value, log_rho = (x.to(torch.float32) for x in (reward, value, next_value, log_rho))
    ratio = torch.exp(log_rho)
    rho = torch.clamp(ratio, max=rho_clip)  # rho_s of eq. 1 (an overflowing ratio clips to rho_bar too)
    carry = gamma * lam * torch.clamp(ratio, max=c_clip) * (1.0 - done.to(torch.float32))  # gamma c_s, eq. 1
    not_terminated = ~terminated.bool()
    # next_value is selected away (not multiplied by 0) where terminated, so garbage there cannot leak
    bootstrapped = torch.where(not_terminated, gamma * next_value, torch.zeros_like(next_value))
    delta = rho * (reward + bootstrapped - value)  # delta_s V, eq. 1
    correction = torch.empty_like(delta)  # v_s - V(x_s)
    following = torch.zeros_like(delta[0])  # v_{s+1} - V(x_{s+1}); none past the rollout's end
    # v_{s+1} - next_value_s: the next step's correction while the episode goes on, 0 where it ends
    next_correction = torch.zeros_like(delta)
    for t in reversed(range(delta.shape[0])):
        next_correction[t] = following * (1.0 - done[t].to(torch.float32))
        following = delta[t] + carry[t] * following
        correction[t] = following
    target = value + correction
    next_target = torch.where(not_terminated, gamma * (next_value + next_correction), torch.zeros_like(next_value))
    return target, rho * (reward + next_target - value)  # eq. 4's advantage, with v_{s+1} for the return
