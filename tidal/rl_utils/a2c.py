"""The advantage actor-critic loss (Mnih et al. 2016, "Asynchronous Methods for Deep Reinforcement Learning",
arXiv 1602.01783, algorithm S3 and section 4's entropy bonus).

It takes log-probabilities and entropies rather than logits, so one function serves every action distribution.
"""
from __future__ import annotations

from typing import NamedTuple

import torch


class A2CLoss(NamedTuple):
    """The loss to minimise and its three terms, each a 0-d tensor."""

    total: torch.Tensor
    policy: torch.Tensor
    value: torch.Tensor
    entropy: torch.Tensor


def a2c_loss(log_prob: torch.Tensor, entropy: torch.Tensor, value: torch.Tensor, advantage: torch.Tensor,
             returns: torch.Tensor, value_weight: float, entropy_weight: float) -> A2CLoss:
    """-mean(A log pi(a|s)) + value_weight mean((V(s) - R)^2) - entropy_weight mean(H(pi(.|s))) over [B] rows,
    with its three terms.

    The advantage A and the return R are targets: no gradient flows through them, so the first term's gradient is
    the policy gradient -mean(A grad log pi) and the second's that of the squared error alone. The squared error has
    no factor 1/2, as in the paper's critic update and tidal's PPO value loss.
    """
    policy_loss = -(log_prob * advantage.detach()).mean()  # the actor's policy-gradient term
    value_loss = (value - returns.detach()).pow(2).mean()  # the critic's squared error
    mean_entropy = entropy.mean()  # the bonus that keeps the policy from collapsing early
    total = policy_loss + value_weight * value_loss - entropy_weight * mean_entropy
    return A2CLoss(total, policy_loss, value_loss, mean_entropy)
