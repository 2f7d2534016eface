"""Q-value networks for the DQN family: an encoder (MLP or CNN, by the observation's shape) and a head of one
value per action, plain or dueling (Wang et al. 2016, arXiv 1511.06581: V(s) + A(s, a) - mean_a A(s, a))."""
from __future__ import annotations

from typing import Optional, Sequence, Union

import torch
import torch.nn as nn

from tidal.models.encoders import build_encoder
from tidal.models.mlp import mlp
from tidal.registry import MODEL_REGISTRY


class DuelingHead(nn.Module):
    """Q(s, .) = V(s) + A(s, .) - mean_a A(s, a): the value and the advantages from their own layers."""

    def __init__(self, in_dim: int, action_dim: int, hidden_sizes: Sequence[int], activation: str) -> None:
        super().__init__()
        self.value = nn.Sequential(mlp(in_dim, hidden_sizes, activation=activation),
                                   nn.Linear(hidden_sizes[-1] if hidden_sizes else in_dim, 1))
        self.advantage = nn.Sequential(mlp(in_dim, hidden_sizes, activation=activation),
                                       nn.Linear(hidden_sizes[-1] if hidden_sizes else in_dim, action_dim))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        advantage = self.advantage(features)
        return self.value(features) + advantage - advantage.mean(dim=-1, keepdim=True)


class PlainHead(nn.Module):
    """Q(s, .) from one MLP."""

    def __init__(self, in_dim: int, action_dim: int, hidden_sizes: Sequence[int], activation: str) -> None:
        super().__init__()
        self.net = nn.Sequential(mlp(in_dim, hidden_sizes, activation=activation),
                                 nn.Linear(hidden_sizes[-1] if hidden_sizes else in_dim, action_dim))

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.net(features)


@MODEL_REGISTRY.register('dqn')
class QNetwork(nn.Module):
    """Q(s, .) [B, A] of observations [B, obs] or [B, H, W, C], from DI-engine's `dqn` model keys read as DI-engine
    reads them: the encoder's layers (`encoder_hidden_size_list`), then in each branch of the head (Q, or V and A
    when `dueling`) `head_layer_num` hidden layers of `head_hidden_size` (None: the encoder's last size) before its
    output layer. DI-engine defaults `head_layer_num` to 1, and a DI-engine config file that leaves it out gets 1;
    tidal's default is 0, the head its own configs were tuned with."""

    def __init__(self, obs_shape: Union[int, Sequence[int]], action_shape: int,
                 encoder_hidden_size_list: Sequence[int] = (128, 128, 64), dueling: bool = True,
                 head_hidden_size: Optional[int] = None, head_layer_num: int = 0, activation: str = 'relu',
                 conv_channels: Sequence[int] = (32, 64, 64), conv_kernel_sizes: Sequence[int] = (8, 4, 3),
                 conv_strides: Sequence[int] = (4, 2, 1), pixel_scale: float = 1.0) -> None:
        super().__init__()
        shape = [obs_shape] if isinstance(obs_shape, int) else list(obs_shape)
        # an image's encoder: the conv layers, then the last size of the list as its one dense layer
        hidden = list(encoder_hidden_size_list) if len(shape) == 1 else list(encoder_hidden_size_list)[-1:]
        self.encoder, features = build_encoder(obs_shape, hidden, activation, conv_channels, conv_kernel_sizes,
                                               conv_strides, pixel_scale)
        if head_layer_num < 0:
            raise ValueError(f'head_layer_num must be >= 0, got {head_layer_num}')
        head_hidden = [head_hidden_size or features] * head_layer_num
        head = DuelingHead if dueling else PlainHead
        self.head = head(features, int(action_shape), head_hidden, activation)
        self.action_dim = int(action_shape)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(obs))
