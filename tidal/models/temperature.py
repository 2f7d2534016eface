"""The entropy temperature alpha of maximum-entropy RL, fixed or tuned towards a target entropy."""
from __future__ import annotations

import math

import torch
import torch.nn as nn


class Temperature(nn.Module):
    """alpha, learnable in log space (log alpha) or directly (alpha, kept >= 0), or fixed.

    Tuning minimises -alpha' * (log pi + target_entropy), SAC v2 (arXiv 1812.05905) eq. 18, where
    alpha' is log alpha in log space and alpha otherwise.
    """

    def __init__(self, init_alpha: float, auto: bool = True, log_space: bool = True) -> None:
        super().__init__()
        if init_alpha <= 0 and (log_space or not auto):
            raise ValueError(f'alpha must be > 0, got {init_alpha}')
        self.auto, self.log_space = auto, log_space
        raw = math.log(init_alpha) if log_space else float(init_alpha)
        if auto:
            self.raw = nn.Parameter(torch.tensor(raw, dtype=torch.float32))
        else:
            self.register_buffer('raw', torch.tensor(raw, dtype=torch.float32))

    @property
    def value(self) -> torch.Tensor:
        """alpha as a detached 0-d tensor, ready to scale an entropy term."""
        raw = self.raw.detach()
        return raw.exp() if self.log_space else raw

    def loss(self, log_prob: torch.Tensor, target_entropy: float) -> torch.Tensor:
        """Temperature loss; `log_prob` holds log pi(a|s) of fresh actions (or -entropy), any shape."""
        return -(self.raw * (log_prob.detach() + target_entropy)).mean()

    @torch.no_grad()
    def clamp_(self) -> None:
        """Keep a directly learned alpha non-negative after an optimizer step."""
        if self.auto and not self.log_space:
            self.raw.clamp_(min=0.0)
