"""What a seed's data feed asks of its learner in one step, kept to be done later for all seeds at once.

In a seed group every seed's feed steps as it would alone (collects, shuffles, samples), but its learner is
an `UpdateRecorder`: the updates it asks for are written down in order. The group then makes the k-th
update of every seed together (`tidal.worker.seed_stack.SeedStack`) and counts it in each seed's own
learner (`Learner.record`), whose hooks log and schedule checkpoints as in a run alone. This is exact for
feeds whose step reads nothing back from its updates (`FeedSpec.groups`): the batches do not depend on them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from tidal.base.modes import LearnMode
from tidal.worker.learner import Learner


@dataclass(frozen=True)
class UpdateRequest:
    """One thing a feed asked of its learner: an update ('train'), an auxiliary update ('phase') or the
    start of an auxiliary phase ('start')."""

    kind: str
    mode: LearnMode
    batch: Optional[dict[str, Any]] = None
    phase: str = ''


class UpdateRecorder:
    """A feed's learner in a seed group: it writes the requests down; `take()` hands them over."""

    def __init__(self, learner: Learner) -> None:
        self.learner = learner
        self.requests: list[UpdateRequest] = []

    @property
    def train_iter(self) -> int:
        """The train iteration the feed would see alone: those made and those written down."""
        return self.learner.train_iter + sum(request.kind == 'train' for request in self.requests)

    def train(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(UpdateRequest('train', self.learner.policy, batch))
        return {}

    def train_phase(self, name: str, mode: LearnMode, batch: dict[str, Any]) -> dict[str, Any]:
        self.requests.append(UpdateRequest('phase', mode, batch, name))
        return {}

    def start_phase(self, mode: LearnMode) -> None:
        self.requests.append(UpdateRequest('start', mode))

    def take(self) -> list[UpdateRequest]:
        requests, self.requests = self.requests, []
        return requests
