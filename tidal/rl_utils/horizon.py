"""EfficientZero's dynamic horizon (arXiv 2111.00210, section 4.3): the older a replayed sample, the
fewer steps its value target looks ahead before it bootstraps, because the actions in old data come
from a worse policy than the one being evaluated."""
from __future__ import annotations

import torch


def linear_td_steps(age: torch.Tensor, max_td_steps: int, max_bootstrap_age: float,
                    min_td_steps: int = 1) -> torch.Tensor:
    """TD steps that fall linearly from `max_td_steps` at age 0 to `min_td_steps` at `max_bootstrap_age`
    and stay there for older samples; rounded up to whole steps (long)."""
    remaining = (1.0 - age.to(torch.float32) / max_bootstrap_age).clamp(min=0.0)
    return (min_td_steps + (max_td_steps - min_td_steps) * remaining).ceil().long()
