"""Multi-agent actor + twin-critic templates for SAC-style algorithms (MASAC).

Observations are dicts: `agent_state` [B, agents, obs], `global_state` [B, global] (and an
`action_mask` that the policy reads). One actor, shared by all agents, acts on each agent's own state,
with the agent's one-hot id appended when `agent_id` is set. The critics score each agent's action
from the global state and the agent's one-hot id, which they always get: the global state alone does
not say which agent is meant. With `global_critic=False` the critics read each agent's own state
instead: independent learners that share weights, the baseline a centralised critic should beat.
Values come per agent, [E, B, agents(, A)].
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from tidal.models.heads import DiscreteHead, GaussianHead
from tidal.models.mlp import EnsembleMLP, mlp
from tidal.models.qac import Shape, flat_dim
from tidal.registry import MODEL_REGISTRY


class _AgentIds(nn.Module):
    """Appends each agent's one-hot id to per-agent features: [B, agents, F] -> [B, agents, F + agents]."""

    eye: torch.Tensor  # a buffer

    def __init__(self, agent_num: int) -> None:
        super().__init__()
        self.register_buffer('eye', torch.eye(agent_num), persistent=False)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        ids = self.eye.to(features.dtype).expand(*features.shape[:-1], -1)
        return torch.cat([features, ids], dim=-1)


def _per_agent_global(global_state: torch.Tensor, agent_num: int) -> torch.Tensor:
    """The global state [B, G] repeated for every agent: [B, agents, G]."""
    return global_state.unsqueeze(-2).expand(*global_state.shape[:-1], agent_num, global_state.shape[-1])


def _critic_state(obs: dict[str, torch.Tensor], agent_num: int, global_critic: bool) -> torch.Tensor:
    """What each agent's critic reads, [B, agents, F]: the global state, or (independent learners) the
    agent's own state."""
    return _per_agent_global(obs['global_state'], agent_num) if global_critic else obs['agent_state']


def _ensemble_per_agent(q: EnsembleMLP, features: torch.Tensor) -> torch.Tensor:
    """The ensemble on per-agent features [B, agents, F] -> [E, B, agents, out]."""
    batch, agents = features.shape[:2]
    out = q(features.reshape(batch * agents, -1))
    return out.reshape(out.shape[0], batch, agents, out.shape[-1])


class MultiAgentDiscreteCritic(nn.Module):
    """Q(s, i, .) for `ensemble_size` critics: obs dict -> [E, B, agents, A]."""

    def __init__(self, state_dim: int, agent_num: int, action_dim: int, hidden_sizes: Sequence[int],
                 ensemble_size: int, activation: str = 'relu', global_critic: bool = True) -> None:
        super().__init__()
        self.agent_num, self.global_critic = agent_num, global_critic
        self.agent_ids = _AgentIds(agent_num)
        self.q = EnsembleMLP(state_dim + agent_num, hidden_sizes, action_dim, ensemble_size, activation)

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        features = self.agent_ids(_critic_state(obs, self.agent_num, self.global_critic))
        return _ensemble_per_agent(self.q, features)


class MultiAgentContinuousCritic(nn.Module):
    """Q(s, i, a_i) for `ensemble_size` critics: (obs dict, action [B, agents, act]) -> [E, B, agents]."""

    def __init__(self, state_dim: int, agent_num: int, action_dim: int, hidden_sizes: Sequence[int],
                 ensemble_size: int, activation: str = 'relu', global_critic: bool = True) -> None:
        super().__init__()
        self.agent_num, self.global_critic = agent_num, global_critic
        self.agent_ids = _AgentIds(agent_num)
        self.q = EnsembleMLP(state_dim + action_dim + agent_num, hidden_sizes, 1, ensemble_size, activation)

    def forward(self, obs: dict[str, torch.Tensor], action: torch.Tensor) -> torch.Tensor:
        state = _critic_state(obs, self.agent_num, self.global_critic)
        features = self.agent_ids(torch.cat([state, action], dim=-1))
        return _ensemble_per_agent(self.q, features).squeeze(-1)


class _MultiAgentActorCritic(nn.Module):
    """A per-agent MLP actor ending in `head_cls`, shared by the agents, beside a global ensemble critic."""

    def __init__(self, agent_num: int, agent_obs_shape: Shape, global_obs_shape: Shape, action_shape: Shape,
                 twin_critic: bool, agent_id: bool, actor_hidden_sizes: Sequence[int],
                 critic_hidden_sizes: Sequence[int], activation: str, head_cls: type[nn.Module],
                 critic_cls: type[nn.Module], global_critic: bool = True) -> None:
        super().__init__()
        if agent_num < 1:
            raise ValueError(f'agent_num must be >= 1, got {agent_num}')
        obs_dim, global_dim, action_dim = flat_dim(agent_obs_shape), flat_dim(global_obs_shape), flat_dim(action_shape)
        self.agent_num, self.action_dim = agent_num, action_dim
        self.agent_ids = _AgentIds(agent_num) if agent_id else None
        actor_in = obs_dim + (agent_num if agent_id else 0)
        self.actor_body = mlp(actor_in, actor_hidden_sizes, activation=activation)
        self.actor_head = head_cls(actor_hidden_sizes[-1] if actor_hidden_sizes else actor_in, action_dim)
        self.critic = critic_cls(global_dim if global_critic else obs_dim, agent_num, action_dim, critic_hidden_sizes,
                                 2 if twin_critic else 1, activation, global_critic)

    def actor(self, obs: dict[str, torch.Tensor]) -> Any:
        agent_state = obs['agent_state']
        if self.agent_ids is not None:
            agent_state = self.agent_ids(agent_state)
        return self.actor_head(self.actor_body(agent_state))

    def actor_parameters(self) -> list[nn.Parameter]:
        return [*self.actor_body.parameters(), *self.actor_head.parameters()]

    def actor_network(self) -> nn.Module:
        """`actor` on `agent_state` [B, agents, obs] as one module without the critics; shares the weights."""
        layers = [self.actor_body, self.actor_head]
        return nn.Sequential(*([self.agent_ids] if self.agent_ids is not None else []), *layers)


@MODEL_REGISTRY.register('continuous_maqac')
class ContinuousMAQAC(_MultiAgentActorCritic):
    """Tanh-Gaussian actor per agent and twin (or single) Q(global state, agent id, agent's action) critic.

    `actor(obs)` gives (mean, log std) [B, agents, act]; `critic(obs, action)` gives [E, B, agents].
    """

    def __init__(self, agent_num: int, agent_obs_shape: Shape, global_obs_shape: Shape, action_shape: Shape,
                 twin_critic: bool = True, agent_id: bool = True, actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu',
                 global_critic: bool = True) -> None:
        super().__init__(agent_num, agent_obs_shape, global_obs_shape, action_shape, twin_critic, agent_id,
                         actor_hidden_sizes, critic_hidden_sizes, activation, GaussianHead, MultiAgentContinuousCritic, global_critic)


@MODEL_REGISTRY.register('discrete_maqac')
class DiscreteMAQAC(_MultiAgentActorCritic):
    """Categorical actor per agent and twin (or single) Q(global state, agent id, .) critic.

    `actor(obs)` gives action logits [B, agents, A]; `critic(obs)` gives [E, B, agents, A].
    """

    def __init__(self, agent_num: int, agent_obs_shape: Shape, global_obs_shape: Shape, action_shape: Shape,
                 twin_critic: bool = True, agent_id: bool = True, actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu',
                 global_critic: bool = True) -> None:
        super().__init__(agent_num, agent_obs_shape, global_obs_shape, action_shape, twin_critic, agent_id,
                         actor_hidden_sizes, critic_hidden_sizes, activation, DiscreteHead, MultiAgentDiscreteCritic, global_critic)
