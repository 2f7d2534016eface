"""Turning collected transitions into training samples."""
from __future__ import annotations

from enum import IntEnum
from typing import Any

import torch


def _map(fn, tree: Any) -> Any:
    if isinstance(tree, dict):
        return {key: _map(fn, value) for key, value in tree.items()}
    return fn(tree)


def get_train_sample(transitions: dict[str, Any], unroll_len: int) -> dict[str, Any]:
    """Split one env's time-ordered columns [T, ...] into samples of `unroll_len` steps.

    With unroll_len 1 the transitions are the samples. Otherwise the result has columns
    [ceil(T / unroll_len), unroll_len, ...]; a last, shorter piece is padded by repeating its final
    step, and the 'valid' column [N, unroll_len] marks which steps are real.
    """
    if unroll_len < 1:
        raise ValueError(f'unroll_len must be >= 1, got {unroll_len}')
    if unroll_len == 1:
        return transitions
    length = next(iter(_leaves(transitions))).shape[0]
    num = -(-length // unroll_len)
    pad = num * unroll_len - length
    index = torch.arange(num * unroll_len).clamp(max=length - 1)

    def split(column: torch.Tensor) -> torch.Tensor:
        column = torch.as_tensor(column)
        return column[index.to(column.device)].reshape(num, unroll_len, *column.shape[1:])

    samples = _map(split, transitions)
    valid = torch.ones(num * unroll_len, dtype=torch.bool)
    if pad:
        valid[-pad:] = False
    samples['valid'] = valid.reshape(num, unroll_len)
    return samples


def _leaves(tree: Any):
    if isinstance(tree, dict):
        for value in tree.values():
            yield from _leaves(value)
    else:
        yield tree


class StepType(IntEnum):
    """Where a transition sits in its episode, stored so sequence samples keep episode boundaries."""

    FIRST = 0  # the episode's first transition (its obs came from a reset)
    MID = 1
    LAST = 2  # the episode ended with this transition (terminated or truncated)


def step_type(first: torch.Tensor, done: torch.Tensor) -> torch.Tensor:
    """int8 step types of a batch of transitions; a one-step episode counts as FIRST (its end is
    still readable from `terminated` / `truncated`)."""
    kind = torch.where(done.bool(), int(StepType.LAST), int(StepType.MID))
    return torch.where(first.bool(), int(StepType.FIRST), kind).to(torch.int8)
