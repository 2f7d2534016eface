"""What every feed shares: its spec and checks as class-level defaults, and the warm-up of the replay feeds."""
from __future__ import annotations

from typing import Any, ClassVar, Mapping, Optional

from tidal.base.collector import Collector
from tidal.base.feed import FeedSpec

WARMUP_CHUNK = 1000  # env steps of random warm-up per feed step, so signals and checkpoints come in between


class Feed:
    """Base of the registered feeds: a subclass sets `SPEC` and overrides the checks it needs."""

    name: ClassVar[str] = ''
    SPEC: ClassVar[FeedSpec] = FeedSpec(entry_point='serial_pipeline', learns='learns off-policy', on_policy=False,
                                        async_collection=True)

    @classmethod
    def spec(cls, cfg: Mapping[str, Any]) -> FeedSpec:
        return cls.SPEC

    @classmethod
    def check_config(cls, cfg: Mapping[str, Any]) -> None:
        """Refuse keys this feed cannot honour, in one line naming the key."""

    @classmethod
    def memory_rows(cls, cfg: Mapping[str, Any]) -> dict[str, int]:
        """Transitions this feed holds besides the replay buffer, by the config key that sets them."""
        return {}

    def collection(self, env_budget: Optional[int]) -> Optional[tuple[int, bool]]:
        """(env steps, random) of the one collection the next `step` starts with, so that a seed group can make
        its seeds' collections together beforehand (`SampleCollector.hand`); None: not known beforehand, the step
        collects for itself."""
        return None

    def reference_scores(self) -> Optional[tuple[float, float]]:
        """(random, expert) returns for a normalised score: none for a feed without a dataset."""
        return None

    def train_iter_budget(self) -> Optional[int]:
        """Updates after which this feed's own budget ends the run (an offline feed's passes over its dataset);
        None: the run's budget alone."""
        return None

    @classmethod
    def warmup(cls, cfg: Mapping[str, Any]) -> tuple[str, int]:
        """The config key and the env steps this feed collects before its first update: a run whose
        env-step budget ends there would learn nothing."""
        return 'policy.random_collect_size', cfg['policy']['random_collect_size']


def within_budget(n_sample: int, env_budget: Optional[int]) -> int:
    """Env steps of a collection cut to what is left of the run's budget: the run passes its
    `--max-env-step` by less than one step of every env (a cut rollout bootstraps at its end, as any)."""
    return n_sample if env_budget is None else max(1, min(n_sample, env_budget))


def warmup_steps(collector: Collector, random_collect_size: int, env_budget: Optional[int]) -> int:
    """Env steps of random warm-up to collect in this feed step: a chunk, within the run's budget."""
    steps = min(random_collect_size - collector.env_step, WARMUP_CHUNK)
    return steps if env_budget is None else min(steps, env_budget)
