"""Policy + state-value templates for PPO and for Phasic Policy Gradient (PPG).

PPG (Cobbe et al. 2020, arXiv 2009.04416) trains the policy and the value function in separate
phases; its network adds an auxiliary value head on the policy's features, so the auxiliary phase
can distil value knowledge into the policy encoder without the value loss touching it otherwise.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence, Union

import torch
import torch.nn as nn
from torch.distributions import Distribution

from tidal.models.encoders import ConvEncoder, MLPEncoder, build_encoder
from tidal.models.policy_heads import build_policy_head
from tidal.registry import MODEL_REGISTRY


def orthogonal_(module: nn.Module, gain: float) -> None:
    """Orthogonal weights with `gain` and zero biases for every linear and conv layer in `module`."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv2d)):
            nn.init.orthogonal_(layer.weight, gain)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)


class _PolicyValueNetwork(nn.Module):
    """What PPO's and PPG's networks share: a policy head and a value head, on separate encoders or one
    shared trunk; each adds its own `forward` (PPG's also returns its auxiliary value)."""

    def __init__(self, obs_shape: Union[int, Sequence[int]], action_shape: int, action_space: str = 'discrete',
                 share_encoder: bool = False, encoder_hidden_sizes: Sequence[int] = (64, 64),
                 activation: str = 'tanh', conv_channels: Sequence[int] = (16,),
                 conv_kernel_sizes: Sequence[int] = (3,), conv_strides: Sequence[int] = (1,),
                 pixel_scale: float = 1.0, log_std_init: float = 0.0, orthogonal_init: bool = True,
                 value_encoder_hidden_sizes: Optional[Sequence[int]] = None) -> None:
        super().__init__()
        self.action_dim, self.action_space = int(action_shape), action_space
        if share_encoder and value_encoder_hidden_sizes is not None:
            raise ValueError('value_encoder_hidden_sizes needs share_encoder=False: a shared encoder has one layout')

        def encoder(hidden_sizes: Sequence[int]) -> tuple[Union[MLPEncoder, ConvEncoder], int]:
            return build_encoder(obs_shape, hidden_sizes, activation, conv_channels, conv_kernel_sizes, conv_strides,
                                 pixel_scale)

        # `encoder` feeds the policy (and the value too when shared); `value_encoder` is None then
        self.encoder, feature_dim = encoder(encoder_hidden_sizes)
        self.policy_head = build_policy_head(action_space, feature_dim, self.action_dim, log_std_init)
        self.value_encoder: Optional[nn.Module] = None
        if not share_encoder:
            value_sizes = encoder_hidden_sizes if value_encoder_hidden_sizes is None else value_encoder_hidden_sizes
            self.value_encoder, feature_dim = encoder(value_sizes)
        self.value_head = nn.Linear(feature_dim, 1)
        if orthogonal_init:
            self.init_orthogonal()

    def init_orthogonal(self) -> None:
        """The baselines / SB3 init: gain sqrt(2) in hidden layers, 0.01 for the policy output (a
        near-uniform first policy) and 1 for the value output; zero biases."""
        orthogonal_(self, math.sqrt(2.0))
        orthogonal_(self.policy_head, 0.01)
        orthogonal_(self.value_head, 1.0)

    def _value_features(self, obs: torch.Tensor, policy_features: Optional[torch.Tensor] = None) -> torch.Tensor:
        """What the value head reads; `policy_features` saves a second pass through a shared encoder."""
        if self.value_encoder is not None:
            return self.value_encoder(obs)
        return self.encoder(obs) if policy_features is None else policy_features

    def policy(self, obs: torch.Tensor, action_mask: Optional[torch.Tensor] = None) -> Distribution:
        return self.policy_head(self.encoder(obs), action_mask)

    def act(self, obs: torch.Tensor, action_mask: Optional[torch.Tensor] = None,
            deterministic: bool = False, generator: Optional[torch.Generator] = None,
            noise: Optional[torch.Tensor] = None) -> torch.Tensor:
        """A sampled (from `noise`, the head's `draw`, else drawn from `generator`, torch's global one when None)
        or the most likely action [B, ...], without building a distribution: the per-env-step path of collection
        and evaluation."""
        features = self.encoder(obs)
        if deterministic:
            return self.policy_head.mode(features, action_mask)
        return self.policy_head.sample(features, action_mask, generator, noise)

    def value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.value_head(self._value_features(obs)).squeeze(-1)


@MODEL_REGISTRY.register('actor_critic')
class ActorCritic(_PolicyValueNetwork):
    """PPO's network: a policy head and a value head, on separate encoders or one shared trunk.

    With `share_encoder` both losses train the shared encoder; without it the value encoder has its own
    layers, `value_encoder_hidden_sizes` (None: the policy's `encoder_hidden_sizes`), since a critic often
    wants a wider net than the actor. Images ([H, W, C] `obs_shape`) get a CNN encoder, vectors an MLP.
    """

    def forward(self, obs: torch.Tensor,
                action_mask: Optional[torch.Tensor] = None) -> tuple[Distribution, torch.Tensor]:
        """(action distribution, value [B])."""
        features = self.encoder(obs)
        value = self.value_head(self._value_features(obs, features)).squeeze(-1)
        return self.policy_head(features, action_mask), value


@MODEL_REGISTRY.register('ppg_disjoint')
class DisjointPolicyValueNetwork(_PolicyValueNetwork):
    """PPG's network: a policy component (encoder, policy head, auxiliary value head) and a value
    component (one value head).

    `share_encoder=True` is the "shared" architecture: the value head reads the policy encoder's
    features detached, in both phases (as OpenAI's code does; the paper detaches only in the policy
    phase), so only the auxiliary value loss and the policy losses train the encoder.
    `share_encoder=False` is the "dual" architecture: the value component has its own encoder.
    """

    def __init__(self, obs_shape: Union[int, Sequence[int]], action_shape: int, action_space: str = 'discrete',
                 share_encoder: bool = False, encoder_hidden_sizes: Sequence[int] = (64, 64),
                 activation: str = 'tanh', conv_channels: Sequence[int] = (16,),
                 conv_kernel_sizes: Sequence[int] = (3,), conv_strides: Sequence[int] = (1,),
                 pixel_scale: float = 1.0, log_std_init: float = 0.0, orthogonal_init: bool = True,
                 value_encoder_hidden_sizes: Optional[Sequence[int]] = None) -> None:
        super().__init__(obs_shape, action_shape, action_space, share_encoder, encoder_hidden_sizes, activation,
                         conv_channels, conv_kernel_sizes, conv_strides, pixel_scale, log_std_init,
                         orthogonal_init=False, value_encoder_hidden_sizes=value_encoder_hidden_sizes)
        self.aux_value_head = nn.Linear(self.encoder.out_dim, 1)
        if orthogonal_init:
            self.init_orthogonal()

    def init_orthogonal(self) -> None:
        super().init_orthogonal()
        orthogonal_(self.aux_value_head, 1.0)

    def _value_features(self, obs: torch.Tensor, policy_features: Optional[torch.Tensor] = None) -> torch.Tensor:
        features = super()._value_features(obs, policy_features)
        return features if self.value_encoder is not None else features.detach()

    def forward(self, obs: torch.Tensor, require_aux: bool = True, action_mask: Optional[torch.Tensor] = None
                ) -> tuple[Distribution, torch.Tensor, Optional[torch.Tensor]]:
        """(action distribution, value [B], auxiliary value [B] or None).

        The policy phase passes `require_aux=False`: the aux head is then not run at all, so every
        parameter that reaches the output also gets a gradient (which DistributedDataParallel needs).
        """
        features = self.encoder(obs)
        value = self.value_head(self._value_features(obs, features)).squeeze(-1)
        aux_value = self.aux_value_head(features).squeeze(-1) if require_aux else None
        return self.policy_head(features, action_mask), value, aux_value

    def aux_value(self, obs: torch.Tensor) -> torch.Tensor:
        return self.aux_value_head(self.encoder(obs)).squeeze(-1)
