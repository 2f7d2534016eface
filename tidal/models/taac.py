"""Actor and twin critics over (observation, trajectory) for temporally abstract actor-critics.

The actor sees the previous trajectory, each of its K components (action, velocity, ...) mapped by
its own linear layer to the observation's width, so a policy can condition on what it is doing now.
The critics score a whole trajectory: Q(s, tau) with tau [B, K, A] flattened beside s.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn
from torch.func import functional_call

from tidal.models.heads import GaussianHead
from tidal.models.mlp import EnsembleLinear, EnsembleMLP, mlp
from tidal.models.qac import Shape, flat_dim
from tidal.registry import MODEL_REGISTRY


@MODEL_REGISTRY.register('trajectory_qac')
class TrajectoryQAC(nn.Module):
    """`actor(obs, tau)` -> (mean, log std) of the pre-tanh Gaussian over the next new action;
    `critic(obs, tau)` -> [E, B] with E = 2 for twin critics."""

    def __init__(self, obs_shape: Shape, action_shape: Shape, trajectory_size: int = 1, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256), critic_hidden_sizes: Sequence[int] = (256, 256),
                 activation: str = 'relu') -> None:
        super().__init__()
        obs_dim, action_dim = flat_dim(obs_shape), flat_dim(action_shape)
        self.action_dim, self.trajectory_size = action_dim, trajectory_size
        # one linear embedding per trajectory component, run as one batched matmul
        self.tau_embedding = EnsembleLinear(action_dim, obs_dim, trajectory_size)
        actor_in = obs_dim * (1 + trajectory_size)
        self.actor_body = mlp(actor_in, actor_hidden_sizes, activation=activation)
        self.actor_head = GaussianHead(actor_hidden_sizes[-1] if actor_hidden_sizes else actor_in, action_dim)
        self.critic = TrajectoryCritic(obs_dim, action_dim * trajectory_size, critic_hidden_sizes,
                                       2 if twin_critic else 1, activation)

    def actor(self, obs: torch.Tensor, tau: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedded = self.tau_embedding(tau.transpose(0, 1))  # [K, B, obs]
        features = torch.cat([obs, embedded.transpose(0, 1).flatten(1)], dim=-1)
        return self.actor_head(self.actor_body(features))

    def actor_parameters(self) -> list[nn.Parameter]:
        return [*self.tau_embedding.parameters(), *self.actor_body.parameters(), *self.actor_head.parameters()]


class TrajectoryCritic(nn.Module):
    """Q(s, tau) for an ensemble of critics: ([B, obs], [B, K, A]) -> [E, B]."""

    def __init__(self, obs_dim: int, tau_dim: int, hidden_sizes: Sequence[int], ensemble_size: int,
                 activation: str = 'relu') -> None:
        super().__init__()
        self.q = EnsembleMLP(obs_dim + tau_dim, hidden_sizes, 1, ensemble_size, activation)

    def forward(self, obs: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        return self.q(torch.cat([obs, tau.flatten(1)], dim=-1)).squeeze(-1)


def keep_or_switch_values(critic: nn.Module, obs: torch.Tensor, kept: torch.Tensor, new: torch.Tensor,
                          constant: bool = False) -> torch.Tensor:
    """[B, 2]: the critics' minimum for keeping the trajectory (`kept`) and for the new one, in one pass of an
    ensemble `critic(obs, tau)` -> [E, B]; with `constant` the critic's parameters are read detached (no
    gradient for them, even where they are a seed group's swapped-in weights), the trajectories not."""
    inputs = (torch.cat([obs, obs]), torch.cat([kept, new]))
    if constant:
        detached = {name: tensor.detach() for name, tensor in critic.named_parameters()}
        q = functional_call(critic, detached, inputs).min(dim=0).values
    else:
        q = critic(*inputs).min(dim=0).values
    return torch.stack(q.chunk(2), dim=-1)


def switch_from_exponentials(probs: torch.Tensor, exponentials: torch.Tensor) -> torch.Tensor:
    """b ~ Categorical(probs) over (keep, new) as a bool per row (True: switch), from Exp(1) draws of the shape of
    `probs`: argmax(probs / exponentials), what torch.multinomial(probs, 1) computes on its own draws."""
    return (probs / exponentials).argmax(dim=-1).bool()
