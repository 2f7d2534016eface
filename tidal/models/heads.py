"""Output heads: a tanh-Gaussian or a deterministic tanh action for bounded continuous actions, logits for
discrete ones."""
from __future__ import annotations

import torch
import torch.nn as nn

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0


class GaussianHead(nn.Module):
    """Mean and state-dependent log std of a Gaussian; the squashing by tanh happens in rl_utils."""

    def __init__(self, hidden_size: int, action_dim: int) -> None:
        super().__init__()
        self.mu = nn.Linear(hidden_size, action_dim)
        self.log_std = nn.Linear(hidden_size, action_dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.mu(x), self.log_std(x).clamp(LOG_STD_MIN, LOG_STD_MAX)

    def init_uniform(self, init_w: float) -> None:
        """Start near a zero-mean, unit-std policy: small uniform weights in the output layers."""
        for layer in (self.mu, self.log_std):
            nn.init.uniform_(layer.weight, -init_w, init_w)
            nn.init.uniform_(layer.bias, -init_w, init_w)


class GlobalStdGaussianHead(nn.Module):
    """Mean of a Gaussian and one learnt log std per action dimension, the same for every state (IQL's actor)."""

    def __init__(self, hidden_size: int, action_dim: int) -> None:
        super().__init__()
        self.mu = nn.Linear(hidden_size, action_dim)
        self.log_std = nn.Parameter(torch.zeros(action_dim))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu = self.mu(x)
        return mu, self.log_std.clamp(LOG_STD_MIN, LOG_STD_MAX).expand_as(mu)


class TanhHead(nn.Module):
    """One deterministic action in [-1, 1]: tanh of a linear layer (the actor of DDPG and TD3)."""

    def __init__(self, hidden_size: int, action_dim: int) -> None:
        super().__init__()
        self.mu = nn.Linear(hidden_size, action_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.mu(x))

    def init_uniform(self, init_w: float) -> None:
        nn.init.uniform_(self.mu.weight, -init_w, init_w)
        nn.init.uniform_(self.mu.bias, -init_w, init_w)


class DiscreteHead(nn.Module):
    """Logits over a discrete action set."""

    def __init__(self, hidden_size: int, action_dim: int) -> None:
        super().__init__()
        self.logits = nn.Linear(hidden_size, action_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.logits(x)

    def init_uniform(self, init_w: float) -> None:
        nn.init.uniform_(self.logits.weight, -init_w, init_w)
        nn.init.uniform_(self.logits.bias, -init_w, init_w)
