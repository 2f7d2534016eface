"""How a seed group splits its seeds into shares, one per process, and what runs a share: the words both the
group's driver and its runners (`group_processes`, `group_ray`) use."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Optional, Protocol, Sequence

import torch.nn as nn
from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.worker.seed_stack import unstackable_layer


@dataclass
class ShareExit:
    """How a share's process ended: normally (all None), stopped by `signum` after checkpointing its seeds,
    `died` (why, in words) with its `live` seeds at their last checkpoint, or unable to start (`error`)."""

    seeds: list[int]
    live: list[int] = field(default_factory=list)
    signum: Optional[int] = None
    died: Optional[str] = None
    error: Optional[str] = None  # what kept it from building its seeds (a config or env error), before training


class ShareRunner(Protocol):
    """Runs a group's shares side by side, each in a process of its own."""

    def processes(self, cfg: EasyDict, seeds: int) -> tuple[int, str]:
        """How many shares to make by default, and why (in words for the header)."""

    def start(self, group_dir: os.PathLike, shares: Sequence[Sequence[int]]) -> None: ...

    def wait(self, on_steps: Callable[[dict[int, int]], None],
             on_line: Callable[[str, bool], None]) -> list[ShareExit]:
        """Until every share has ended: their seeds' env steps to `on_steps`, their output lines to `on_line`
        (the line, whether it is an error line), both from this thread. Returns how each ended."""

    def stop_all(self) -> None:
        """Ask every share to checkpoint its seeds and stop (safe from a signal handler)."""

    def close(self) -> None:
        """Stop whatever still runs, at once: nothing is left behind."""


def split_seeds(seeds: Sequence[int], parts: int) -> list[list[int]]:
    """`seeds` in `parts` consecutive shares whose sizes differ by at most one, the larger first."""
    parts = max(1, min(parts, len(seeds)))
    size, extra = divmod(len(seeds), parts)
    shares, start = [], 0
    for index in range(parts):
        end = start + size + (index < extra)
        shares.append(list(seeds[start:end]))
        start = end
    return shares


STACK_BOUND = 40_000_000  # parameters x batch rows above which stacking a CPU update stops paying


def stacking_pays(cfg: EasyDict) -> tuple[bool, str]:
    """Whether a group's processes stack their seeds (else they train them in turn), and why, in words for the
    header. `seed_group.share` decides when set; a model with a layer whose update cannot be stacked (BatchNorm,
    Dropout) trains in turn; on cuda stacking always pays (it saves kernel launches). On a
    CPU it pays while the update is small: its model's parameters times its batch rows at most STACK_BOUND (a
    stacked update of 4 or 8 seeds cost less than the separate ones at 29M, more at 52M: results.md section 22)."""
    share = cfg.get('seed_group', {}).get('share', 'auto')
    if share != 'auto':
        return share == 'stacked', 'seed_group.share'
    model = learning_modules(cfg)
    layer = unstackable_layer(model)
    if layer is not None:
        return False, f'its {layer}'
    if policy_device(cfg.policy).type == 'cuda':
        return True, 'on cuda'
    size = update_size(cfg, model)
    words = f'{size / 1e6:.1f}M parameters x batch rows per update'
    if size <= STACK_BOUND:
        return True, f'{words}, at most {STACK_BOUND / 1e6:.0f}M'
    return False, f'{words}: above {STACK_BOUND / 1e6:.0f}M stacking does not pay on a CPU'


def learning_modules(cfg: EasyDict) -> dict[str, nn.Module]:
    """The config's policy's model, built alone (no optimizers, no target copies), by its part name."""
    from tidal.registry import policy_class
    return {'model': policy_class(cfg.policy.type, cfg.policy)(cfg.policy, enable_field=()).model}


def update_size(cfg: EasyDict, modules: Optional[dict[str, nn.Module]] = None) -> int:
    """The size of one update of the config's policy: its model's parameters times the rows of a batch (a
    minibatch, for an on-policy learner)."""
    modules = modules if modules is not None else learning_modules(cfg)
    params = sum(parameter.numel() for module in modules.values() for parameter in module.parameters())
    return params * int(cfg.policy.get('learn', {}).get('batch_size', 1) or 1)


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity, which a cluster's scheduler or taskset narrows)."""
    if hasattr(os, 'sched_getaffinity'):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def local_processes(cfg: EasyDict, seeds: int) -> tuple[int, str]:
    """The processes a group makes on this machine: `seed_group.processes` when set, else one per visible GPU on
    cuda (one, on the GPU a `cuda:N` device names), else one per usable core; never more than one per seed."""
    chosen = int(cfg.get('seed_group', {}).get('processes', 0) or 0)
    if chosen:
        return min(chosen, seeds), 'seed_group.processes'
    device = policy_device(cfg.policy)
    if device.type == 'cuda':
        if device.index is not None:  # a GPU named by the config: the group stays on it
            return 1, f'on {device}'
        import torch
        return min(max(torch.cuda.device_count(), 1), seeds), 'one per GPU'
    cores = usable_cpus()
    return min(cores, seeds), 'one per usable core' if cores > 1 else 'one usable core'


def seed_list(seeds: Sequence[int]) -> str:
    """Seeds in words, runs of consecutive ones as ranges: '0-7', '0, 2, 5-6'."""
    words: list[str] = []
    index = 0
    while index < len(seeds):
        end = index
        while end + 1 < len(seeds) and seeds[end + 1] == seeds[end] + 1:
            end += 1
        words.append(str(seeds[index]) if end - index < 2 else f'{seeds[index]}-{seeds[end]}')
        if end - index == 1:
            words.append(str(seeds[end]))
        index = end + 1
    return ', '.join(words)
