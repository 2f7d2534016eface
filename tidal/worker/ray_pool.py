"""The Ray rollout workers every collection mode drives: the actors, their recovery and the weight versions.

Per collection the learner's weights go into Ray's object store once per version (one version per batch handed
to the learner), and each worker collects with the version it is given. A worker whose process dies, or whose env
raises, is restarted by Ray and given new episodes; `max_restarts` failures in a row of one worker stop the run
with its error.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from easydict import EasyDict

from tidal.base.errors import ConfigError, PolicyError, TidalError, last_line
from tidal.base.modes import CollectView
from tidal.base.nest import to_cpu
from tidal.config.tree import to_plain
from tidal.rl_utils.normalizer import moments_added
from tidal.worker.ray_cluster import connect_ray
from tidal.worker.ray_worker import RolloutWorker
from tidal.worker.rng import stream_seed

READY_TIMEOUT_S = 120.0  # a worker Ray cannot place or build in this time is reported, not waited on
RESTART_STREAM = 2       # stream_seed stream of the seeds a restarted worker's envs start from


class WorkerError(TidalError):
    """A Ray rollout worker kept failing, or could not be started."""


@dataclass
class Rollout:
    """A collection every worker was asked for: its result refs, steps per worker and weights' version."""

    refs: list[Any]
    per_worker: int
    version: int


class WorkerPool:
    """`collector.num_workers` rollout workers, each with `envs_per_worker` of the run's collector envs."""

    def __init__(self, cfg: EasyDict, policy: CollectView, env_step: Callable[[], int],
                 notify: Callable[[str], None]) -> None:
        """`env_step`: the collector's count, for the failure messages; `notify`: where a restart is told."""
        import ray
        collector_cfg = cfg.collector
        self.policy = policy  # the collect mode: its acting weights go to the workers
        self.max_restarts = collector_cfg.max_restarts
        self.seed = cfg.seed
        self.notify = notify
        self._env_step = env_step
        num_workers = collector_cfg.num_workers
        per_worker = collector_cfg.envs_per_worker or cfg.env.collector_env_num // num_workers
        connect_ray(cfg)
        # Ray restarts a dead worker as often as it takes; the run bounds failures in a row itself
        actor_cls = ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0)(RolloutWorker)
        plain_cfg = to_plain(cfg)
        path = [os.getcwd(), *sys.path]
        # Ray types an actor method's `.remote` only where the method is decorated with @ray.method, and
        # RolloutWorker stays plain Python (Ray is an optional dependency): the handles are Any here
        self.actors: list[Any] = [actor_cls.remote(plain_cfg, index, index * per_worker, per_worker, path)
                                  for index in range(num_workers)]
        self.envs_per_worker = per_worker
        self.version = 0  # learner rounds so far: one per batch handed to the learner
        self._sent: dict[int, dict[str, Any]] = {}  # weights (CPU) per version still in flight
        self._sent_refs: dict[int, Any] = {}
        self._failures = [0] * num_workers  # failures in a row, per worker
        self._incarnations: list[Optional[str]] = [None] * num_workers  # each worker process's id (`ping`)
        self.restarts = 0
        self._wait_ready()

    @property
    def num_envs(self) -> int:
        return len(self.actors) * self.envs_per_worker

    def close(self) -> None:
        import ray
        for actor in self.actors:
            ray.kill(actor, no_restart=True)

    def reset(self, base: int) -> None:
        """New episodes in every worker's envs; env i is seeded with `base + i`."""
        import ray
        refs = [actor.reset.remote(base) for actor in self.actors]
        for index, ref in enumerate(refs):
            try:
                ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
                self._recover(index, err)  # restarts the worker and resets it with a seed of its own

    # ----- collections -------------------------------------------------------------------------
    def run(self, index: int, n_sample: int, random: bool, version: Optional[int] = None) -> Any:
        """Worker `index` starts `n_sample` env steps with the weights of `version` (default the current ones)."""
        weights = None if random else self.weights_ref(self.version if version is None else version)
        return self.actors[index].collect.remote(weights, n_sample, random)

    def share(self, n_sample: int) -> int:
        """Env steps each worker collects of a collection of `n_sample`."""
        return -(-n_sample // len(self.actors))

    def launch(self, n_sample: int, random: bool) -> Rollout:
        """Every worker starts its share of `n_sample` env steps with the current weights."""
        per_worker = self.share(n_sample)
        refs = [self.run(index, per_worker, random) for index in range(len(self.actors))]
        return Rollout(refs, per_worker, self.version)

    def gather(self, refs: list[Any], n_sample: int, random: bool,
               version: Optional[int] = None) -> list[dict[str, Any]]:
        """Every worker's result; a failed worker is restarted and its collection done again (with the
        weights of `version`, default the current ones)."""
        results: list[Optional[dict[str, Any]]] = [None] * len(refs)
        while any(result is None for result in results):
            for index, ref in enumerate(refs):
                if results[index] is not None:
                    continue
                results[index] = self.result(index, ref)
                if results[index] is None:
                    refs[index] = self.run(index, n_sample, random, version)
        return [result for result in results if result is not None]

    def result(self, index: int, ref: Any) -> Optional[dict[str, Any]]:
        """Worker `index`'s result of `ref`; None when it failed, after recovering the worker (the caller
        gives it its work again)."""
        import ray
        try:
            result = ray.get(ref)
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
            self._recover(index, err)
            return None
        self._failures[index] = 0
        return result

    # ----- weights and statistics -----------------------------------------------------------
    def weights_ref(self, version: int) -> Any:
        """The weights of `version` in the object store: the current ones are put there once per version."""
        import ray
        if version not in self._sent_refs:
            weights = to_cpu(self.policy.weights())
            self._sent[version] = weights
            self._sent_refs[version] = ray.put(weights)
        return self._sent_refs[version]

    def keep_versions(self, live: set[int]) -> None:
        """Forget the weights of every version but `live` (those of collections still in flight)."""
        for version in [v for v in self._sent if v not in live]:
            del self._sent[version], self._sent_refs[version]

    def merge_statistics(self, updated: list[dict[str, Any]], version: int) -> None:
        """Fold the data the workers' running statistics saw (since the weights of `version` went out)
        into the learner's, which may have moved on since (see moments_added)."""
        stats = self.policy.running_statistics()
        if stats:
            sent = self._sent[version]
            for name, mine in stats.items():
                for state in updated:
                    added = moments_added(sent[name], state[name])
                    if added is not None:
                        mine.merge_moments(*added)

    # ----- resume ------------------------------------------------------------------------------
    def worker_states(self) -> list[dict[str, Any]]:
        """Every worker's envs and acting stream (only between collections: none may be in flight)."""
        import ray
        return ray.get([actor.state_dict.remote() for actor in self.actors])

    def load_worker_states(self, workers: list[dict[str, Any]], fallback_seed: int) -> Optional[str]:
        """Every worker's episodes continued; the reasons of those that start new ones (from `fallback_seed`)."""
        import ray
        reasons = ray.get([actor.load_state_dict.remote(worker, fallback_seed)
                           for actor, worker in zip(self.actors, workers)])
        failed = [f'worker {index}: {reason}' for index, reason in enumerate(reasons) if reason]
        return '; '.join(failed) or None

    # ----- faults ------------------------------------------------------------------------------
    def _recover(self, index: int, err: BaseException) -> None:
        """Log the failure, restart the worker if its process still runs, and start new episodes."""
        import ray
        self._failures[index] += 1
        self.restarts += 1
        first = index * self.envs_per_worker
        where = (f'Ray worker {index} (collector envs {first}..{first + self.envs_per_worker - 1}) failed '
                 f'at env step {self._env_step()}')
        cause = getattr(err, 'cause', None)
        if isinstance(cause, (PolicyError, ConfigError)):
            # the policy's or the config's own error fails the same way in a fresh process: no restart
            raise WorkerError(f'{where}: {last_line(cause)}') from None
        if self._failures[index] > self.max_restarts:
            raise WorkerError(f'{where}, {self._failures[index]} times in a row; stopping '
                              f'(collector.max_restarts={self.max_restarts}): {error_cause(err)}') from None
        self.notify(f'{where}: {error_cause(err)}; restarting it ({self._failures[index]} of '
                    f'{self.max_restarts} in a row)')
        actor = self.actors[index]
        if not isinstance(err, ray.exceptions.RayActorError):
            ray.kill(actor, no_restart=False)  # an env that raised may be broken: a fresh process
        self._await_restart(index)
        seed = stream_seed(self.seed, RESTART_STREAM, index, self.restarts) - first
        try:
            self._when_up(index, lambda: actor.reset.remote(seed))
        except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as reset_err:
            self._recover(index, reset_err)

    def _wait_ready(self) -> None:
        """Block until every worker is placed and built, or say why one is not."""
        import ray
        for index, actor in enumerate(self.actors):
            try:
                self._incarnations[index] = self._when_up(index, actor.ping.remote)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
                raise WorkerError(f'Ray worker {index} could not be built: {error_cause(err)}') from None

    def _await_restart(self, index: int) -> None:
        """Wait until worker `index` answers from a new process. `ray.kill` returns before the old process has
        ended, and a call sent to it meanwhile would die with it: a second failure the env never had."""
        import ray
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                incarnation = self._when_up(index, self.actors[index].ping.remote)
            except ray.exceptions.RayActorError:  # the old process is going down
                incarnation = self._incarnations[index]
            if incarnation != self._incarnations[index]:
                self._incarnations[index] = incarnation
                return
            if time.monotonic() > deadline:
                raise WorkerError(f'Ray did not restart worker {index} in {READY_TIMEOUT_S:.0f} s')
            time.sleep(0.1)

    def _when_up(self, index: int, call: Callable[[], Any]) -> Any:
        """`ray.get(call())`, calling again while Ray is restarting the worker."""
        import ray
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                return ray.get(call(), timeout=max(1.0, deadline - time.monotonic()))
            except ray.exceptions.ActorUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
            except ray.exceptions.GetTimeoutError:
                cpus = ray.cluster_resources().get('CPU', 0)
                raise WorkerError(f'Ray could not start worker {index} in {READY_TIMEOUT_S:.0f} s '
                                  f'(collector.num_workers={len(self.actors)}, 1 CPU each; the cluster has '
                                  f'{cpus:g} CPUs)') from None


def error_cause(err: BaseException) -> str:
    """The worker's own error, in one line, without Ray's traceback."""
    cause = getattr(err, 'cause', None)
    if isinstance(cause, BaseException):
        return f'{type(cause).__name__}: {last_line(cause)}'
    return f'{type(err).__name__}: {last_line(err)}'
