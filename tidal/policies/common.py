"""Small pieces the policies share: optimizer construction and stepping, batch access."""
from __future__ import annotations

from typing import Any, Iterable, Optional

import torch


def adam(params: Iterable[Any], lr: float) -> torch.optim.Adam:
    """Adam with fused kernels (CPU and CUDA): one kernel per step instead of one per parameter.

    `params` are parameters or param groups (dicts with their own 'lr').
    """
    return torch.optim.Adam(list(params), lr=lr, fused=True)


def optimizer_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def bootstrap_mask(batch: dict[str, Any], ignore_done: bool) -> torch.Tensor:
    """The `terminated` column as float, or zeros when the config says to always bootstrap."""
    terminated = batch['terminated'].to(torch.float32)
    return torch.zeros_like(terminated) if ignore_done else terminated


def sample_weight(batch: dict[str, Any], use_is_weight: bool) -> Optional[torch.Tensor]:
    """Importance-sampling weights of a prioritized batch, if the config asks for them."""
    return batch['weight'] if use_is_weight else None


def split_action_mask(obs: Any) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
    """(observation, action_mask or None) from a plain or dict observation batch."""
    if isinstance(obs, dict):
        return obs['observation'], obs.get('action_mask')
    return obs, None
