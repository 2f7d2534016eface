"""Actor + twin-critic templates for SAC-style algorithms, DDPG and TD3.

The critics are one `EnsembleMLP`: both Q functions run in a single batched matmul per layer, and
their outputs come stacked along a leading ensemble dimension.
"""
from __future__ import annotations

from functools import partial
from typing import Annotated, Any, Optional, Sequence, Union

import torch
import torch.nn as nn

from tidal.base.defaults import ConfigRule
from tidal.models.batch_renorm import BatchRenorm
from tidal.models.heads import DiscreteHead, GaussianHead, GlobalStdGaussianHead, TanhHead
from tidal.models.mlp import EnsembleLayerNorm, EnsembleMLP, NormFactory, mlp
from tidal.registry import MODEL_REGISTRY

_FLAT_ONLY = 'MLP models take flat vectors (use an encoder model for images)'
#: A flat vector's size, n or [n]; the rule lets the config compiler refuse an env's image shape early.
Shape = Annotated[Union[int, Sequence[int]], ConfigRule('int > 0 or list[int > 0] of length 1', _FLAT_ONLY)]


def flat_dim(shape: Shape) -> int:
    """Number of features of a 1-D shape given as an int or a one-element list."""
    if isinstance(shape, int):
        return shape
    shape = list(shape)
    if len(shape) != 1:
        raise ValueError(f'{_FLAT_ONLY}; got shape {shape}')
    return int(shape[0])


class ContinuousCritic(nn.Module):
    """Q(s, a) for `ensemble_size` critics: ([B, obs], [B, act]) -> [E, B]."""

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes: Sequence[int], ensemble_size: int,
                 activation: str = 'relu', norm: Optional[NormFactory] = None,
                 hidden_norm: Optional[NormFactory] = None) -> None:
        super().__init__()
        self.q = EnsembleMLP(obs_dim + action_dim, hidden_sizes, 1, ensemble_size, activation, norm, hidden_norm)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.q(torch.cat([obs, action], dim=-1)).squeeze(-1)


class DiscreteCritic(nn.Module):
    """Q(s, .) for `ensemble_size` critics: [B, obs] -> [E, B, A]."""

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes: Sequence[int], ensemble_size: int,
                 activation: str = 'relu') -> None:
        super().__init__()
        self.q = EnsembleMLP(obs_dim, hidden_sizes, action_dim, ensemble_size, activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(obs)


class _ActorCritic(nn.Module):
    """An MLP actor ending in `head_cls` beside an ensemble critic of class `critic_cls`; with `norm`, a
    normalisation layer before every linear layer of both (the heads' included)."""

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool, actor_hidden_sizes: Sequence[int],
                 critic_hidden_sizes: Sequence[int], activation: str, head_cls: type[nn.Module],
                 critic_cls: type[nn.Module], norm: Optional[NormFactory] = None, actor_layer_norm: bool = False,
                 critic_layer_norm: bool = False) -> None:
        """`actor_layer_norm`, `critic_layer_norm`: a LayerNorm after every hidden activation of the actor, of each
        critic (ReBRAC's)."""
        super().__init__()
        obs_dim, action_dim = flat_dim(obs_shape), flat_dim(action_shape)
        self.action_dim = action_dim
        head_in = actor_hidden_sizes[-1] if actor_hidden_sizes else obs_dim
        self.actor_body = mlp(obs_dim, actor_hidden_sizes, activation=activation, norm=norm,
                              hidden_norm=nn.LayerNorm if actor_layer_norm else None)
        if norm is not None:
            self.actor_body.append(norm(head_in))
        self.actor_head = head_cls(head_in, action_dim)
        critic_args: tuple[Any, ...] = () if norm is None else (norm,)
        if critic_layer_norm:
            critic_args = (norm, EnsembleLayerNorm)
        self.critic = critic_cls(obs_dim, action_dim, critic_hidden_sizes, 2 if twin_critic else 1, activation,
                                 *critic_args)

    def actor(self, obs: torch.Tensor) -> Any:
        return self.actor_head(self.actor_body(obs))

    def actor_network(self) -> nn.Module:
        """`actor` as one module without the critics (what an exported policy holds); shares the weights."""
        return nn.Sequential(self.actor_body, self.actor_head)

    def actor_parameters(self) -> list[nn.Parameter]:
        return [*self.actor_body.parameters(), *self.actor_head.parameters()]


@MODEL_REGISTRY.register('continuous_qac')
class ContinuousQAC(_ActorCritic):
    """Tanh-Gaussian actor and twin (or single) Q critic for bounded continuous actions.

    `actor(obs)` gives the (mean, log std) of the pre-tanh Gaussian; `critic(obs, action)` gives [E, B].
    """

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu',
                 state_dependent_std: bool = True) -> None:
        """`state_dependent_std=False`: one learnt log std per action dimension instead of a layer's output."""
        super().__init__(obs_shape, action_shape, twin_critic, actor_hidden_sizes, critic_hidden_sizes, activation,
                         GaussianHead if state_dependent_std else GlobalStdGaussianHead, ContinuousCritic)


@MODEL_REGISTRY.register('batch_renorm_qac')
class BatchRenormQAC(_ActorCritic):
    """`continuous_qac` with batch renormalisation (`BatchRenorm`) before every linear layer of the actor and the
    critics, as CrossQ's networks (wider critics by default, as Stable-Baselines3-contrib's CrossQ).

    Learning updates the running statistics; acting reads them. A critic evaluated on the joint batch of (s, a)
    and (s', a') normalises both halves by the same statistics, which is what lets CrossQ drop target networks.
    """

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256), critic_hidden_sizes: Sequence[int] = (1024, 1024),
                 activation: str = 'relu', momentum: float = 0.01, eps: float = 1e-3,
                 warmup_steps: int = 100_000) -> None:
        norm = partial(BatchRenorm, momentum=momentum, eps=eps, warmup_steps=warmup_steps)
        super().__init__(obs_shape, action_shape, twin_critic, actor_hidden_sizes, critic_hidden_sizes, activation,
                         GaussianHead, ContinuousCritic, norm)


@MODEL_REGISTRY.register('deterministic_qac')
class DeterministicQAC(_ActorCritic):
    """Deterministic tanh actor and twin (or single) Q critic for bounded continuous actions (DDPG, TD3).

    `actor(obs)` gives the action in [-1, 1]; `critic(obs, action)` gives [E, B].
    """

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu',
                 actor_layer_norm: bool = False, critic_layer_norm: bool = False) -> None:
        super().__init__(obs_shape, action_shape, twin_critic, actor_hidden_sizes, critic_hidden_sizes, activation,
                         TanhHead, ContinuousCritic, actor_layer_norm=actor_layer_norm,
                         critic_layer_norm=critic_layer_norm)


@MODEL_REGISTRY.register('discrete_qac')
class DiscreteQAC(_ActorCritic):
    """Categorical actor and twin (or single) Q(s, .) critic for discrete actions.

    `actor(obs)` gives action logits; `critic(obs)` gives [E, B, A].
    """

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu') -> None:
        super().__init__(obs_shape, action_shape, twin_critic, actor_hidden_sizes, critic_hidden_sizes, activation,
                         DiscreteHead, DiscreteCritic)


@MODEL_REGISTRY.register('deterministic_actor')
class DeterministicActor(nn.Module):
    """A deterministic tanh actor alone, for bounded continuous actions (behaviour cloning): `actor(obs)` gives the
    action in [-1, 1]."""

    def __init__(self, obs_shape: Shape, action_shape: Shape, actor_hidden_sizes: Sequence[int] = (256, 256),
                 activation: str = 'relu') -> None:
        super().__init__()
        obs_dim, self.action_dim = flat_dim(obs_shape), flat_dim(action_shape)
        self.actor_body = mlp(obs_dim, actor_hidden_sizes, activation=activation)
        self.actor_head = TanhHead(actor_hidden_sizes[-1] if actor_hidden_sizes else obs_dim, self.action_dim)

    def actor(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor_head(self.actor_body(obs))

    def actor_network(self) -> nn.Module:
        return nn.Sequential(self.actor_body, self.actor_head)
