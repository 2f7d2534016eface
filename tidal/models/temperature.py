"""The entropy temperature alpha of maximum-entropy RL, fixed or tuned towards a target entropy."""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from tidal.base.errors import ConfigError


class Temperature(nn.Module):
    """alpha, learnable in log space (log alpha) or directly (alpha, kept >= 0), or fixed.

    Tuning minimises -alpha' * (log pi + target_entropy), SAC v2 (arXiv 1812.05905) eq. 18, where
    alpha' is log alpha in log space and alpha otherwise. A fixed alpha is kept as it is, so 0 (no
    entropy bonus) is allowed; only a learned log alpha needs alpha > 0.
    """

    def __init__(self, init_alpha: float, auto: bool = True, log_space: bool = True,
                 key: str = 'policy.learn.alpha') -> None:
        """`key` names the config value of `init_alpha` in errors."""
        super().__init__()
        self.auto, self.log_space = auto, log_space and auto
        if self.log_space and not init_alpha > 0:
            raise ConfigError(f'{key} must be > 0 when auto_alpha tunes it as log(alpha), got {init_alpha}')
        if not 0 <= init_alpha < math.inf:
            raise ConfigError(f'{key} must be a finite number >= 0, got {init_alpha}')
        raw = math.log(init_alpha) if self.log_space else float(init_alpha)
        if auto:
            self.raw = nn.Parameter(torch.tensor(raw, dtype=torch.float32))
        else:
            self.register_buffer('raw', torch.tensor(raw, dtype=torch.float32))

    @property
    def value(self) -> torch.Tensor:
        """alpha as a detached 0-d tensor, ready to scale an entropy term."""
        raw = self.raw.detach()
        return raw.exp() if self.log_space else raw

    def loss(self, log_prob: torch.Tensor, target_entropy: float | torch.Tensor) -> torch.Tensor:
        """Temperature loss; `log_prob` holds log pi(a|s) of fresh actions (or -entropy), any shape, and
        `target_entropy` is one number or one per sample (broadcast against `log_prob`)."""
        return -(self.raw * (log_prob.detach() + target_entropy)).mean()

    @torch.no_grad()
    def clamp_(self) -> None:
        """Keep a directly learned alpha non-negative after an optimizer step."""
        if self.auto and not self.log_space:
            self.raw.clamp_(min=0.0)
