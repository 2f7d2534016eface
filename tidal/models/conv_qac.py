"""Discrete SAC's networks for images (Atari): the actor and each critic read the frames through their own
conv encoder, as in Christodoulou 2019 (arXiv 1910.07207), whose Atari networks are separate.

The model answers what `discrete_qac` answers (`actor(obs)` logits, `critic(obs)` [E, B, A],
`actor_parameters()`, `action_dim`), so discrete SAC runs it unchanged.
"""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from tidal.models.encoders import ConvEncoder
from tidal.models.heads import DiscreteHead
from tidal.models.mlp import EnsembleLinear
from tidal.registry import MODEL_REGISTRY


class ConvDiscreteCritic(nn.Module):
    """Q(s, .) for `ensemble_size` critics, each with its own conv encoder: [B, H, W, C] -> [E, B, A]."""

    def __init__(self, encoders: Sequence[ConvEncoder], action_dim: int) -> None:
        super().__init__()
        self.encoders = nn.ModuleList(encoders)
        self.q = EnsembleLinear(encoders[0].out_dim, action_dim, len(encoders))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.q(torch.stack([encoder(obs) for encoder in self.encoders]))


@MODEL_REGISTRY.register('discrete_conv_qac')
class DiscreteConvQAC(nn.Module):
    """Categorical actor and twin (or single) Q(s, .) critics on channel-last images, each network with its
    own conv encoder (conv layers, then `encoder_hidden_sizes`); the defaults are the Nature CNN."""

    def __init__(self, obs_shape: Sequence[int], action_shape: int, twin_critic: bool = True,
                 conv_channels: Sequence[int] = (32, 64, 64), conv_kernel_sizes: Sequence[int] = (8, 4, 3),
                 conv_strides: Sequence[int] = (4, 2, 1), encoder_hidden_sizes: Sequence[int] = (512,),
                 activation: str = 'relu', pixel_scale: float = 1 / 255) -> None:
        super().__init__()
        if len(obs_shape) != 3:
            raise ValueError(f'discrete_conv_qac takes [H, W, C] images; got obs_shape {list(obs_shape)}')
        self.action_dim = int(action_shape)

        def encoder() -> ConvEncoder:
            return ConvEncoder(obs_shape, conv_channels, conv_kernel_sizes, conv_strides, encoder_hidden_sizes,
                               activation, pixel_scale)

        self.actor_encoder = encoder()
        self.actor_head = DiscreteHead(self.actor_encoder.out_dim, self.action_dim)
        self.critic = ConvDiscreteCritic([encoder() for _ in range(2 if twin_critic else 1)], self.action_dim)

    def actor(self, obs: torch.Tensor) -> torch.Tensor:
        return self.actor_head(self.actor_encoder(obs))

    def actor_network(self) -> nn.Module:
        """`actor` as one module without the critics (what an exported policy holds); shares the weights."""
        return nn.Sequential(self.actor_encoder, self.actor_head)

    def actor_parameters(self) -> list[nn.Parameter]:
        return [*self.actor_encoder.parameters(), *self.actor_head.parameters()]
