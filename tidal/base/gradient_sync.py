"""The gradient synchronisation of an optimizer (several learner processes average their gradients).

The policies' step helpers (`tidal.policies.common`) run it between the backward pass and clipping, so that
clipping and the logged gradient norm see the gradient of the whole batch; `tidal.worker.distributed` registers
it. Both reach it here, on the ground floor. A single process registers nothing and pays one dict look-up per
step.
"""
from __future__ import annotations

import weakref
from typing import Callable, Optional

import torch

GradientSync = Callable[[torch.optim.Optimizer], None]

_gradient_syncs: weakref.WeakKeyDictionary[torch.optim.Optimizer, GradientSync] = weakref.WeakKeyDictionary()


def set_gradient_sync(optimizer: torch.optim.Optimizer, sync: Optional[GradientSync]) -> None:
    """Make every step of `optimizer` through the policies' step helpers first call `sync(optimizer)`, between
    the backward pass and clipping (None: no synchronisation)."""
    if sync is None:
        _gradient_syncs.pop(optimizer, None)
    else:
        _gradient_syncs[optimizer] = sync


def sync_gradients(optimizer: torch.optim.Optimizer) -> None:
    """Run the synchronisation registered for `optimizer`, if any (after its backward pass)."""
    sync = _gradient_syncs.get(optimizer)
    if sync is not None:
        sync(optimizer)
