"""An update as a list of loss stages: the form in which a seed group can make the update of all its seeds at once.

A policy that states its update as a `LearnPlan` (`Policy._learn_plan`) runs it alone through `run_plan`,
one clipped optimizer step per stage, and in a seed group (`tidal train --seeds N`) through
`tidal.worker.seed_stack.SeedStack`, which evaluates each stage's loss for every seed in one vectorised
pass over stacked weights. The loss is the same function in both: it is written for one seed.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import torch
import torch.nn as nn

#: (loss, values to log) of one batch; the values are 0-d tensors.
LossFn = Callable[[dict[str, Any]], tuple[torch.Tensor, dict[str, torch.Tensor]]]


@dataclass(frozen=True)
class LossStage:
    """One gradient step: minimise `loss` with `optimizer`, its gradient norm clipped to `grad_clip_norm`.

    For a seed group the loss must read parameters only through the policy's stacked modules
    (`Parts.stacked`), draw no random numbers, and not branch on the values of the batch.
    """

    optimizer: torch.optim.Optimizer
    loss: LossFn
    grad_clip_norm: Optional[float]
    loss_key: Optional[str] = 'total_loss'  # the logged name of the loss (None: not logged)
    norm_key: Optional[str] = 'grad_norm'   # the logged name of the gradient norm before clipping (None: not logged)
    # modules the loss reads as constants: alone their parameters need no gradient (a group differentiates only
    # the optimizer's tensors anyway)
    frozen: Sequence[nn.Module] = ()
    after_step: Optional[Callable[[], None]] = None  # e.g. clamp a parameter into its range, after the step
    # given the stage's logged values after its step: a policy keeps one to report in updates that skip the stage
    seen: Optional[Callable[[dict[str, torch.Tensor]], None]] = None


@dataclass(frozen=True)
class LearnPlan:
    """The stages of one update, in order, and values to log beside theirs (a learning rate, a clip ratio)."""

    stages: list[LossStage]
    info: dict[str, torch.Tensor] = field(default_factory=dict)
    after: Optional[Callable[[], None]] = None  # after the last stage (a Polyak update of target networks)


#: batch -> the plan of its update (the policy sets learning rates and schedules as it builds it).
PlanFn = Callable[[dict[str, Any]], LearnPlan]
