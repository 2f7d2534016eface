"""Heads that turn features into an action distribution, for on-policy methods (PPO, PPG).

Distributions skip argument validation: it costs more than the forward pass on small networks.
"""
from __future__ import annotations

import torch
import torch.nn as nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from tidal.rl_utils import gumbel_max_sample, masked_logits


class CategoricalPolicyHead(nn.Module):
    """A categorical over `action_dim` actions; actions with mask 0/False get probability 0."""

    def __init__(self, in_dim: int, action_dim: int) -> None:
        super().__init__()
        self.logits = nn.Linear(in_dim, action_dim)

    def forward(self, features: torch.Tensor, action_mask: torch.Tensor | None = None) -> Distribution:
        return Categorical(logits=masked_logits(self.logits(features), action_mask), validate_args=False)

    def sample(self, features: torch.Tensor, action_mask: torch.Tensor | None = None,
               generator: torch.Generator | None = None, noise: torch.Tensor | None = None) -> torch.Tensor:
        """A sample [B] straight from the logits: `Categorical` normalizes them first, which costs more
        than the rest of a one-env step. `noise`: the uniform draws of `draw`, made beforehand."""
        return gumbel_max_sample(masked_logits(self.logits(features), action_mask), generator, noise)

    def draw(self, batch: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
        """The uniform numbers `sample` draws for a batch of shape `batch`, from `generator`."""
        weight = self.logits.weight
        return torch.rand((*batch, self.logits.out_features), dtype=weight.dtype, device=weight.device,
                          generator=generator)

    def mode(self, features: torch.Tensor, action_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The most likely allowed action [B]."""
        return masked_logits(self.logits(features), action_mask).argmax(dim=-1)


class GaussianPolicyHead(nn.Module):
    """A diagonal Gaussian over unbounded actions (the policy clips them for the env).

    The log std is one learned parameter per action dim, not a function of the state: PPO's usual
    choice (baselines, SB3), so exploration noise is the same in every state and changes slowly.
    """

    def __init__(self, in_dim: int, action_dim: int, log_std_init: float = 0.0) -> None:
        super().__init__()
        self.mu = nn.Linear(in_dim, action_dim)
        self.log_std = nn.Parameter(torch.full((action_dim,), float(log_std_init)))

    def forward(self, features: torch.Tensor, action_mask: torch.Tensor | None = None) -> Distribution:
        mu = self.mu(features)  # continuous actions have no mask: `action_mask` is ignored
        std = self.log_std.exp().expand_as(mu)
        return Independent(Normal(mu, std, validate_args=False), 1, validate_args=False)

    def sample(self, features: torch.Tensor, action_mask: torch.Tensor | None = None,
               generator: torch.Generator | None = None, noise: torch.Tensor | None = None) -> torch.Tensor:
        """A sample [B, action_dim]: mean plus std times standard normal noise (`noise`: drawn beforehand)."""
        mu = self.mu(features)
        if noise is None:
            noise = torch.randn(mu.shape, dtype=mu.dtype, device=mu.device, generator=generator)
        return mu + self.log_std.exp() * noise

    def draw(self, batch: tuple[int, ...], generator: torch.Generator | None = None) -> torch.Tensor:
        """The standard normal numbers `sample` draws for a batch of shape `batch`, from `generator`."""
        weight = self.mu.weight
        return torch.randn((*batch, self.mu.out_features), dtype=weight.dtype, device=weight.device,
                           generator=generator)

    def mode(self, features: torch.Tensor, action_mask: torch.Tensor | None = None) -> torch.Tensor:
        """The mean action [B, action_dim]."""
        return self.mu(features)


ACTION_SPACES = ('discrete', 'continuous')


def build_policy_head(action_space: str, in_dim: int, action_dim: int,
                      log_std_init: float) -> CategoricalPolicyHead | GaussianPolicyHead:
    """The head for `action_space`: 'discrete' (categorical) or 'continuous' (Gaussian)."""
    if action_space == 'discrete':
        return CategoricalPolicyHead(in_dim, action_dim)
    if action_space == 'continuous':
        return GaussianPolicyHead(in_dim, action_dim, log_std_init)
    raise ValueError(f"unknown action_space '{action_space}'; choose from {list(ACTION_SPACES)}")
