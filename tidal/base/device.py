"""Where networks and losses live, resolved once from `policy.device` and the legacy `policy.cuda`, and how
tensors get there."""
from __future__ import annotations

from typing import Any, Mapping

import torch

from tidal.base.errors import ConfigError


def resolve_device(device: str, cuda: bool = False) -> torch.device:
    """Turn `policy.device` ('cpu' | 'cuda' | 'auto') and the legacy `policy.cuda` flag into a device."""
    if cuda and device == 'cpu':
        device = 'cuda'
    if device == 'auto':
        device = 'cuda' if torch.cuda.is_available() else 'cpu'
    if device not in ('cpu', 'cuda') and not device.startswith('cuda:'):
        raise ConfigError(f"policy.device must be 'cpu', 'cuda' or 'auto', got '{device}'")
    if device.startswith('cuda') and not torch.cuda.is_available():
        raise ConfigError(f"policy.device is '{device}' but torch sees no CUDA device; use 'cpu' or 'auto'")
    return torch.device(device)


def policy_device(policy_cfg: Mapping[str, Any]) -> torch.device:
    """The device of a policy section (compiled or as the user wrote it)."""
    return resolve_device(policy_cfg.get('device', 'cpu'), policy_cfg.get('cuda', False))


def to_device(tensor: torch.Tensor, device: torch.device) -> torch.Tensor:
    """`tensor` on `device`; from the host to a GPU through pinned memory, so that the copy does not make the
    host wait for the GPU's queue (a plain copy from pageable memory synchronises)."""
    if tensor.device == device or device.type != 'cuda' or tensor.device.type != 'cpu':
        return tensor.to(device)
    return tensor.pin_memory().to(device, non_blocking=True)
