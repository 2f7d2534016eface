"""The DataFeed contract: an algorithm family's data path (collection, buffers and the updates they feed).

A policy names its feed (`Policy.pipeline = 'rollout'`), a class registered in `FEED_REGISTRY`. The feed
class says what the rest of tidal needs to know of it, as class attributes and class methods, so that the
entry points, the config checks and the CLI read them from the feed instead of keeping tables of names:
its entry point, whether it learns on-policy, the config keys it refuses and the rows it keeps in memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Optional, Protocol

from easydict import EasyDict

from tidal.base.collector import Collector
from tidal.base.modes import LearnMode, PolicyViews


class Trainer(Protocol):
    """What a feed asks of the learner: updates, counted in train iterations."""

    @property
    def train_iter(self) -> int: ...
    def train(self, batch: dict[str, Any]) -> dict[str, Any]: ...
    def train_phase(self, name: str, mode: LearnMode, batch: dict[str, Any]) -> dict[str, Any]: ...
    def start_phase(self, mode: LearnMode) -> None: ...


@dataclass(frozen=True)
class FeedSpec:
    """What the entry points and the config checks know of a feed."""

    entry_point: str         # the serial entry point that trains it: 'serial_pipeline_onpolicy'
    learns: str              # how, for errors: 'learns on-policy'
    on_policy: bool          # learns from fresh rollouts only (no replay, no warm-up)
    async_collection: bool   # collector.mode='async' (Ape-X style staleness) can feed it
    # collector.mode='async' collects the next rollout while this one is learnt (a policy lag of one rollout)
    rollout_ahead: bool = False
    # its step reads nothing back from its updates, so a seed group can make them after the step, for all seeds
    # at once (tidal.worker.update_recorder)
    groups: bool = False
    # learns from a fixed dataset: no env steps but evaluation, the budget and the logs in train iterations
    offline: bool = False


class DataFeed(Protocol):
    """One data path, driven by the run shell one `step` at a time."""

    def warmed_up(self) -> bool: ...  # evaluation and the first checkpoint wait for the warm-up
    # collect at most env_budget env steps (rounded up to whole steps of every env), then learn
    def step(self, env_budget: Optional[int]) -> None: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...
    # (random, expert) returns that put evaluations on D4RL's normalised score (an offline dataset's), or None
    def reference_scores(self) -> Optional[tuple[float, float]]: ...
    def train_iter_budget(self) -> Optional[int]: ...  # updates after which the feed's own budget ends the run


class FeedClass(Protocol):
    """A registered feed class: its spec, its checks, and the constructor the run calls."""

    name: ClassVar[str]

    @classmethod
    def spec(cls, cfg: Mapping[str, Any]) -> FeedSpec: ...
    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None: ...  # keys the feed refuses, one line each
    @classmethod
    def memory_rows(cls, cfg: Mapping[str, Any]) -> dict[str, int]: ...  # config key -> transitions it holds
    @classmethod
    def warmup(cls, cfg: Mapping[str, Any]) -> tuple[str, int]: ...  # (config key, env steps before any update)
    def __call__(self, cfg: EasyDict, views: PolicyViews, collector: Collector, learner: Trainer) -> DataFeed: ...
