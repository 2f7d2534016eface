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


def split_action_mask(obs: Any) -> tuple[Any, Optional[torch.Tensor]]:
    """(observation, action_mask or None) from a plain or dict observation batch.

    The observation of a dict is its 'observation' entry, or, when it has none, the dict of its other
    entries (a multi-agent obs: 'agent_state' and 'global_state', which the model reads).
    """
    if not isinstance(obs, dict):
        return obs, None
    if 'observation' in obs:
        return obs['observation'], obs.get('action_mask')
    return {key: value for key, value in obs.items() if key != 'action_mask'}, obs.get('action_mask')


def sample_categorical(prob: torch.Tensor) -> torch.Tensor:
    """One action index per row of probabilities [..., A] -> [...] (e.g. [B] or [B, agents])."""
    return torch.multinomial(prob.reshape(-1, prob.shape[-1]), 1).reshape(prob.shape[:-1])
