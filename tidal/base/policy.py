"""What the workers hold of a built policy: its device and config, its modes and the weights acting needs.

The workers (collectors, Ray workers, checkpoints, seed groups) import no policy class: they are typed against
this Protocol, which `tidal.policies.base.Policy` (and any object with the same members) satisfies.
"""
from __future__ import annotations

from typing import Any, Mapping, Protocol

import torch
import torch.nn as nn
from easydict import EasyDict

from tidal.base.modes import CollectView, EvalView, LearnView, PolicyViews, RunningStatistic
from tidal.base.parts import Parts


class PolicyLike(Protocol):
    """A policy object as the workers use it; each member says who needs it."""

    @property
    def device(self) -> torch.device: ...
    @property
    def cfg(self) -> EasyDict: ...  # the policy's config section (its `type` names it in errors)
    @property
    def model(self) -> nn.Module: ...  # what the finite checks look at
    @property
    def learn_mode(self) -> LearnView: ...
    @property
    def collect_mode(self) -> CollectView: ...
    @property
    def eval_mode(self) -> EvalView: ...
    def views(self) -> PolicyViews: ...  # what its data feed sees
    # acting's weights, for a copy of the collect mode elsewhere (a Ray worker, a CPU copy) and for checkpoints
    def weights(self) -> dict[str, Any]: ...
    def load_weights(self, state: dict[str, Any]) -> None: ...
    def running_statistics(self) -> Mapping[str, RunningStatistic]: ...
    # its declared parts: what a seed group stacks over its seeds (`Parts.stacked`) and steps for all of them
    @property
    def parts(self) -> Parts: ...
    def learn_optimizers(self) -> list[torch.optim.Optimizer]: ...
