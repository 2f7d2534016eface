"""Acting on the CPU for a learner on a GPU (`policy.collect.acting_device='cpu'`).

A small policy network acting for a few envs costs a GPU more in launches and in the round trip of every
step's observations and actions than the CPU costs to compute it. This collector acts with a CPU copy of the
collect mode instead: before each collection the copy loads the learner's weights (one transfer from the GPU),
after it the learner takes back the running statistics that acting updated (observation and return
normalisers), and the collected samples travel to the learner's device once, through pinned memory.
"""
from __future__ import annotations

from typing import Any

from tidal.base.device import to_device
from tidal.base.nest import tree_map
from tidal.base.policy import PolicyLike
from tidal.envs.env_manager import EnvManager
from tidal.worker.collector import SampleCollector


class CopyActingCollector(SampleCollector):
    """A `SampleCollector` acting with `copy` (a CPU policy with a collect mode), which `learner` refreshes."""

    def __init__(self, env: EnvManager, learner: PolicyLike, copy: PolicyLike) -> None:
        super().__init__(env, copy.collect_mode, copy.device)
        self._learner, self._copy = learner, copy

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        self._copy.load_weights(self._learner.weights())
        sample = super().collect(n_sample, random)
        learner_statistics = self._learner.running_statistics()
        for name, statistics in self._copy.running_statistics().items():
            learner_statistics[name].load_state_dict(statistics.state_dict())
        device = self._learner.device
        return tree_map(lambda leaf: to_device(leaf, device) if hasattr(leaf, 'device') else leaf, sample)
