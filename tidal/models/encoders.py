"""Observation encoders: an MLP for flat vectors and a small CNN for channel-last images.

`build_encoder` picks one from the observation shape, so a model can take either kind of env.
"""
from __future__ import annotations

from typing import Sequence, Union

import torch
import torch.nn as nn

from tidal.models.mlp import mlp


class MLPEncoder(nn.Module):
    """[B, in_dim] -> [B, out_dim], with `activation` after every layer (the features feed heads)."""

    def __init__(self, in_dim: int, hidden_sizes: Sequence[int], activation: str = 'tanh') -> None:
        super().__init__()
        self.net = mlp(in_dim, hidden_sizes, activation=activation)
        self.out_dim = hidden_sizes[-1] if hidden_sizes else in_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        if not obs.is_floating_point():  # integer or bool observations (e.g. one-hot grids)
            obs = obs.float()
        return self.net(obs)


def conv_layers(image_channels: int, channels: Sequence[int], kernel_sizes: Sequence[int],
                strides: Sequence[int]) -> tuple[list[nn.Module], int]:
    """Conv layers, each followed by ReLU, and the number of channels they end with."""
    if not len(channels) == len(kernel_sizes) == len(strides):
        raise ValueError(f'conv_channels {list(channels)}, conv_kernel_sizes {list(kernel_sizes)} and '
                         f'conv_strides {list(strides)} must have the same length')
    layers: list[nn.Module] = []
    in_channels = image_channels
    for out_channels, kernel_size, stride in zip(channels, kernel_sizes, strides):
        layers += [nn.Conv2d(in_channels, out_channels, kernel_size, stride), nn.ReLU()]
        in_channels = out_channels
    return layers, in_channels


def flat_dim_of(net: nn.Module, obs_shape: Sequence[int]) -> int:
    """Features `net` makes of one (H, W, C) image: it depends on every kernel and stride, so measure it."""
    height, width, image_channels = (int(size) for size in obs_shape)
    with torch.no_grad():
        return net(torch.zeros(1, image_channels, height, width)).flatten(1).shape[1]


def image_batch(obs: torch.Tensor, pixel_scale: float) -> torch.Tensor:
    """[B, H, W, C] images of any dtype as float [B, C, H, W] for conv layers, times `pixel_scale`."""
    return (obs.float() * pixel_scale).permute(0, 3, 1, 2)


class ConvEncoder(nn.Module):
    """[B, H, W, C] images (gymnasium's channel-last layout, any dtype) -> [B, out_dim].

    Conv layers (each followed by ReLU), then an MLP with `activation` after every layer.
    """

    def __init__(self, obs_shape: Sequence[int], channels: Sequence[int], kernel_sizes: Sequence[int],
                 strides: Sequence[int], hidden_sizes: Sequence[int], activation: str = 'relu',
                 pixel_scale: float = 1.0) -> None:
        super().__init__()
        layers, _ = conv_layers(int(obs_shape[2]), channels, kernel_sizes, strides)
        self.conv = nn.Sequential(*layers, nn.Flatten())
        flat_dim = flat_dim_of(self.conv, obs_shape)
        self.mlp = mlp(flat_dim, hidden_sizes, activation=activation)
        self.pixel_scale = pixel_scale
        self.out_dim = hidden_sizes[-1] if hidden_sizes else flat_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.conv(image_batch(obs, self.pixel_scale)))


def build_encoder(obs_shape: Union[int, Sequence[int]], hidden_sizes: Sequence[int], activation: str,
                  conv_channels: Sequence[int], conv_kernel_sizes: Sequence[int], conv_strides: Sequence[int],
                  pixel_scale: float) -> tuple[Union[MLPEncoder, ConvEncoder], int]:
    """An MLP for an int or 1-element shape, a CNN for an (H, W, C) image; returns (encoder, feature dim)."""
    shape = [obs_shape] if isinstance(obs_shape, int) else list(obs_shape)
    if len(shape) == 1:
        encoder: Union[MLPEncoder, ConvEncoder] = MLPEncoder(int(shape[0]), hidden_sizes, activation)
    elif len(shape) == 3:
        encoder = ConvEncoder(shape, conv_channels, conv_kernel_sizes, conv_strides, hidden_sizes, activation,
                              pixel_scale)
    else:
        raise ValueError(f'cannot encode observations of shape {shape}: expected a vector (int or [n]) '
                         f'or an image [H, W, C]')
    return encoder, encoder.out_dim
