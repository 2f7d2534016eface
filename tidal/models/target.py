"""Target networks: a frozen copy of a module that follows it by Polyak averaging."""
from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn as nn


class TargetNetwork(nn.Module):
    """A copy of `net` that is only changed by `update` (theta <- (1 - tau) theta + tau theta_online).

    Attribute access falls through to the copy, so `target.critic(...)`-style calls read naturally.
    """

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = copy.deepcopy(net)
        self.net.requires_grad_(False)
        self._online = [net]  # a list, so the online module is not registered (and not saved) twice
        self._target_params: list[torch.Tensor] = list(self.net.parameters())
        self._online_params: list[torch.Tensor] = list(net.parameters())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.net(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.net, name)

    @torch.no_grad()
    def update(self, tau: float) -> None:
        """Polyak (momentum) update towards the online network, all parameters in one fused op."""
        torch._foreach_lerp_(self._target_params, self._online_params, tau)
        for target_buf, online_buf in zip(self.net.buffers(), self._online[0].buffers()):
            target_buf.copy_(online_buf)
