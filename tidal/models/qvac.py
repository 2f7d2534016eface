"""Actor, twin Q critics and a state-value network: the three networks of SAC's first formulation."""
from __future__ import annotations

from typing import Sequence

import torch
import torch.nn as nn

from tidal.models.mlp import mlp
from tidal.models.qac import ContinuousQAC, Shape, flat_dim
from tidal.registry import MODEL_REGISTRY


class StateValue(nn.Module):
    """V(s): [B, obs] -> [B]."""

    def __init__(self, obs_dim: int, hidden_sizes: Sequence[int], activation: str = 'relu') -> None:
        super().__init__()
        self.v = mlp(obs_dim, hidden_sizes, 1, activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.v(obs).squeeze(-1)


@MODEL_REGISTRY.register('continuous_qvac')
class ContinuousQVAC(ContinuousQAC):
    """`ContinuousQAC` plus a state-value network: `value(obs)` gives [B]."""

    def __init__(self, obs_shape: Shape, action_shape: Shape, twin_critic: bool = True,
                 actor_hidden_sizes: Sequence[int] = (256, 256),
                 critic_hidden_sizes: Sequence[int] = (256, 256),
                 value_hidden_sizes: Sequence[int] = (256, 256), activation: str = 'relu',
                 state_dependent_std: bool = True) -> None:
        super().__init__(obs_shape, action_shape, twin_critic, actor_hidden_sizes, critic_hidden_sizes, activation,
                         state_dependent_std)
        self.value = StateValue(flat_dim(obs_shape), value_hidden_sizes, activation)
