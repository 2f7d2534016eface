"""Losses and diagnostics of PPO (Schulman et al. 2017, arXiv 1707.06347).

PPO replaces TRPO's KL constraint by clipping the probability ratio, so one batch can be reused for
several epochs of minibatch SGD without the policy moving far from the one that collected it.
"""
from __future__ import annotations

from typing import Optional

import torch


def ppo_policy_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantage: torch.Tensor,
                    clip_ratio: float | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(clipped surrogate loss, approximate KL(old || new), clip fraction), each a 0-d tensor.

    The minimum of the clipped and unclipped objectives is a pessimistic bound: the ratio gets no
    credit for moving beyond [1 - eps, 1 + eps] in the direction the advantage rewards. The two
    diagnostics carry no gradient; they are for logging and early stopping.
    """
    log_ratio = log_prob - old_log_prob
    ratio = log_ratio.exp()  # r_t(theta), PPO eq. 6
    unclipped = ratio * advantage
    clipped = _clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio) * advantage
    loss = -torch.min(unclipped, clipped).mean()  # L^CLIP, PPO eq. 7, negated to minimise
    with torch.no_grad():
        # (r - 1) - log r >= 0, unbiased and low-variance (Schulman, "Approximating KL divergence", 2020)
        approx_kl = ((ratio - 1.0) - log_ratio).mean()
        clip_fraction = ((ratio - 1.0).abs() > clip_ratio).float().mean()
    return loss, approx_kl, clip_fraction


def ppo_value_loss(value: torch.Tensor, old_value: torch.Tensor, returns: torch.Tensor,
                   clip_ratio: Optional[float | torch.Tensor]) -> torch.Tensor:
    """Mean squared error of `value` to `returns`, without the factor 1/2 (SB3's convention, so a
    value weight of 0.5 matches its vf_coef). With `clip_ratio`, the pessimistic clipped form of
    openai baselines' PPO2, which keeps V within `clip_ratio` of the value that collected the data.
    """
    squared = (value - returns).pow(2)  # (V - R)^2, the value term of PPO eq. 9
    if clip_ratio is None:
        return squared.mean()
    clipped_value = old_value + _clamp(value - old_value, -clip_ratio, clip_ratio)
    return torch.max(squared, (clipped_value - returns).pow(2)).mean()  # baselines ppo2 value clipping


def normalize_advantage(advantage: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """(A - mean) / (std + eps) over the whole batch; a batch of one has no spread and gives zeros."""
    centred = advantage - advantage.mean()
    if advantage.numel() < 2:  # the unbiased std of one sample is nan
        return centred
    return centred / (advantage.std() + eps)


def explained_variance(prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """1 - Var[target - prediction] / Var[target]: 1 is a perfect value function, 0 no better than
    predicting the mean, negative worse. Returns 0 when the target has no variance (SB3 returns nan),
    so the logged number is always finite.
    """
    with torch.no_grad():
        target_var = target.var(unbiased=False)
        explained = 1.0 - (target - prediction).var(unbiased=False) / target_var
        return torch.where(target_var == 0, torch.zeros_like(explained), explained)  # no .item() sync


def _clamp(value: torch.Tensor, low: float | torch.Tensor, high: float | torch.Tensor) -> torch.Tensor:
    """`value` clamped to [low, high]; the bounds are numbers, or 0-d tensors where a compiled update's schedule
    passes them (`CompiledUpdate.scalar`)."""
    if isinstance(low, torch.Tensor) or isinstance(high, torch.Tensor):
        return torch.clamp(value, torch.as_tensor(low), torch.as_tensor(high))
    return value.clamp(low, high)
