"""Labels of where a stored transition sits in its episode."""
from __future__ import annotations

from enum import IntEnum
import torch


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
