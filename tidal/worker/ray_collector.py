"""The collector on Ray: rollout workers as Ray actors, driven with the local collector's interface.

Per collection the learner's weights go into Ray's object store once, every worker steps its own
vector env with them, and the samples come back as numpy columns. In 'sync' mode a collection waits
for all workers and interleaves their rows step-major over the run's envs, exactly as the local
collector lays them out (one worker acts exactly as the local collector: same env seeds, same acting
stream). 'async' mode takes one of two forms, as the feed asks:
- off-policy (Ape-X): each worker starts its next collection as soon as it hands one in, with the newest
  weights, and `collect` returns the first batch that is ready; the rounds of learning a batch's weights are
  behind the learner (its staleness) are logged and bounded by `max_staleness`.
- on-policy (a feed with `rollout_ahead`, as IMPALA and Sample Factory do it): each worker starts its share
  of the next rollout as soon as it hands in its share of this one, with the learner's weights before it
  learns from this one, so the next rollout is collected while the learner trains. Every rollout but the
  first reaches the learner exactly one rollout behind its weights (logged as `policy_lag`); its rows carry
  the behaviour policy's log-probabilities, which PPO's ratio is taken against. A rollout asked for with
  fewer steps than were collected ahead (the run's last, cut to its budget) is cut to them.

A worker whose process dies, or whose env raises, is restarted by Ray and its collection is done
again with new episodes; `max_restarts` failures in a row of one worker stop the run with its error.
"""
from __future__ import annotations

import os
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np
import torch
from easydict import EasyDict

from tidal.config.tree import to_plain
from tidal.base.collector import EpisodeStats
from tidal.base.errors import ConfigError, PolicyError, TidalError
from tidal.base.modes import CollectView
from tidal.rl_utils.normalizer import moments_added
from tidal.worker.collector import steps_per_env
from tidal.worker.ray_cluster import connect_ray, one_line
from tidal.worker.ray_worker import RolloutWorker
from tidal.worker.rng import stream_seed
from tidal.base.nest import to_cpu, to_tensor, tree_map, tree_zip_map

READY_TIMEOUT_S = 120.0  # a worker Ray cannot place or build in this time is reported, not waited on
RESTART_STREAM = 2       # stream_seed stream of the seeds a restarted worker's envs start from


class WorkerError(TidalError):
    """A Ray rollout worker kept failing, or could not be started."""


class RayCollector:
    """`collect(n_sample, random)` over Ray rollout workers; see the module docstring."""

    def __init__(self, cfg: EasyDict, policy: CollectView, device: torch.device, rollout_ahead: bool = False) -> None:
        """`rollout_ahead`: in 'async' mode, collect whole rollouts one ahead of the learner (on-policy feeds)."""
        import ray
        collector_cfg = cfg.collector
        self.policy = policy  # the collect mode: its acting weights go to the workers
        self.device = device
        self.mode = collector_cfg.mode
        self.rollout_ahead = rollout_ahead
        self.max_staleness = collector_cfg.max_staleness
        self.max_restarts = collector_cfg.max_restarts
        self.seed = cfg.seed
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
        self.env_step = 0
        self.episodes = EpisodeStats()
        self.notify: Callable[[str], None] = lambda message: print(f'tidal: {message}', file=sys.stderr, flush=True)
        self.version = 0  # learner rounds so far: one per batch handed to the learner
        self._sent: dict[int, dict[str, Any]] = {}  # weights (CPU) per version still in flight
        self._sent_refs: dict[int, Any] = {}
        self._pending: dict[Any, tuple[int, int]] = {}  # async: ref -> (worker, version)
        self._ahead: Optional[_Rollout] = None  # async on-policy: the rollout being collected for the next call
        self._lag: Optional[int] = None  # async on-policy: learner rounds the latest rollout's weights were behind
        self._failures = [0] * num_workers  # failures in a row, per worker
        self._incarnations: list[Optional[str]] = [None] * num_workers  # each worker process's id (`ping`)
        self._restarts = 0
        self._staleness: deque[int] = deque(maxlen=1000)
        self._dropped = 0
        self._seconds = 0.0  # the workers' own seconds of collecting
        self._learner_waited = 0.0  # the learner's seconds in `collect`: the samples it waited for and received
        self._wait_ready()

    # ----- the collector interface ------------------------------------------------------------
    @property
    def num_envs(self) -> int:
        return len(self.actors) * self.envs_per_worker

    def close(self) -> None:
        import ray
        for actor in self.actors:
            ray.kill(actor, no_restart=True)

    def reset(self, seed: Optional[int] = None) -> None:
        """New episodes in every worker's envs; env i is seeded with `seed + i`, as locally."""
        import ray
        self._cancel_pending()
        base = stream_seed(self.seed) if seed is None else seed
        refs = [actor.reset.remote(base) for actor in self.actors]
        for index, ref in enumerate(refs):
            try:
                ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.RayTaskError) as err:
                self._recover(index, err)  # restarts the worker and resets it with a seed of its own

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        """At least `n_sample` env steps of training samples; see the module docstring for the modes."""
        start = time.monotonic()
        try:
            if self.mode == 'async' and not random:
                return self._collect_ahead(n_sample) if self.rollout_ahead else self._collect_async(n_sample)
            return self._collect_sync(n_sample, random)
        finally:
            self._learner_waited += time.monotonic() - start

    def _collect_sync(self, n_sample: int, random: bool) -> dict[str, Any]:
        self._cancel_pending()
        rollout = self._launch_rollout(n_sample, random)
        results = self._gather(rollout.refs, rollout.per_worker, random)
        self._merge_statistics([result['statistics'] for result in results], self.version)
        for result in results:
            self._count(result)
        self.version += 0 if random else 1
        return to_tensor(_interleave([result['sample'] for result in results], results[0]['steps']), self.device)

    def monitor(self) -> dict[str, float]:
        """Collection figures for the train log: staleness and policy lag (async), dropped rows, restarts, the
        workers' seconds collecting and the learner's seconds waiting for them (near 0: the learner is the limit)."""
        values: dict[str, float] = {'collector_restarts': float(self._restarts), 'collect_seconds': self._seconds,
                                    'learner_wait_seconds': self._learner_waited}
        if self._lag is not None:
            values['policy_lag'] = float(self._lag)
        if self._staleness:
            values['staleness_mean'] = float(np.mean(self._staleness))
            values['staleness_max'] = float(np.max(self._staleness))
            values['dropped_stale_steps'] = float(self._dropped)
        return values

    # ----- sync --------------------------------------------------------------------------------
    def _run(self, index: int, n_sample: int, random: bool, version: Optional[int] = None) -> Any:
        weights = None if random else self._weights_ref(self.version if version is None else version)
        return self.actors[index].collect.remote(weights, n_sample, random)

    def _share(self, n_sample: int) -> int:
        """Env steps each worker collects of a collection of `n_sample`."""
        return -(-n_sample // len(self.actors))

    def _launch_rollout(self, n_sample: int, random: bool) -> _Rollout:
        """Every worker starts its share of `n_sample` env steps with the current weights."""
        per_worker = self._share(n_sample)
        refs = [self._run(index, per_worker, random) for index in range(len(self.actors))]
        return _Rollout(refs, per_worker, self.version)

    def _gather(self, refs: list[Any], n_sample: int, random: bool,
                version: Optional[int] = None) -> list[dict[str, Any]]:
        """Every worker's result; a failed worker is restarted and its collection done again (with the
        weights of `version`, default the current ones)."""
        results: list[Optional[dict[str, Any]]] = [None] * len(refs)
        while any(result is None for result in results):
            for index, ref in enumerate(refs):
                if results[index] is not None:
                    continue
                results[index] = self._result(index, ref)
                if results[index] is None:
                    refs[index] = self._run(index, n_sample, random, version)
        return [result for result in results if result is not None]

    def _result(self, index: int, ref: Any) -> Optional[dict[str, Any]]:
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

    # ----- async, on-policy ---------------------------------------------------------------------
    def _collect_ahead(self, n_sample: int) -> dict[str, Any]:
        """The rollout collected ahead (the first call collects one). Each worker starts its share of the next
        rollout, with the current weights, as soon as it hands in its share of this one (no worker waits for
        the slowest), so the workers collect that rollout while the learner trains on this one."""
        rollout = self._ahead or self._launch_rollout(n_sample, False)
        per_worker = self._share(n_sample)
        results, next_refs = self._gather_relaunching(rollout, per_worker)
        self._ahead = _Rollout(next_refs, per_worker, self.version)
        steps = min(results[0]['steps'], steps_per_env(n_sample, self.num_envs))
        for result in results:
            self._count(result, steps)
        self._merge_statistics([result['statistics'] for result in results], rollout.version)
        self._lag = self.version - rollout.version
        self.version += 1
        self._forget_versions()
        sample = _interleave([result['sample'] for result in results], results[0]['steps'])
        return to_tensor(tree_map(lambda column: column[:steps * self.num_envs], sample), self.device)

    def _gather_relaunching(self, rollout: _Rollout, per_worker: int) -> tuple[list[dict[str, Any]], list[Any]]:
        """Every worker's share of `rollout`, in the order they finish, and the refs of the next rollout: a worker
        that hands in its share starts `per_worker` steps of it at once; a failed one is restarted and does its
        share again with the rollout's weights."""
        import ray
        pending = {ref: index for index, ref in enumerate(rollout.refs)}
        results: list[Optional[dict[str, Any]]] = [None] * len(self.actors)
        next_refs: list[Any] = [None] * len(self.actors)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(ready[0])
            results[index] = self._result(index, ready[0])
            if results[index] is None:
                pending[self._run(index, rollout.per_worker, False, rollout.version)] = index
                continue
            next_refs[index] = self._run(index, per_worker, False)
        return [result for result in results if result is not None], next_refs

    # ----- async -------------------------------------------------------------------------------
    def _collect_async(self, n_sample: int) -> dict[str, Any]:
        """The first batch a worker hands in whose weights are at most `max_staleness` rounds behind."""
        import ray
        for index in range(len(self.actors)):
            if index not in {worker for worker, _ in self._pending.values()}:
                self._launch(index, n_sample)
        while True:
            ready, _ = ray.wait(list(self._pending), num_returns=1)
            index, version = self._pending.pop(ready[0])
            result = self._result(index, ready[0])
            self._launch(index, n_sample)  # collecting goes on while the learner trains on this batch
            if result is None:
                continue
            self._count(result)
            staleness = self.version - version
            self._staleness.append(staleness)
            if staleness > self.max_staleness:
                self._dropped += result['steps'] * self.envs_per_worker
                continue
            self._merge_statistics([result['statistics']], version)
            self._forget_versions()
            self.version += 1
            return to_tensor(_interleave([result['sample']], result['steps']), self.device)

    def _launch(self, index: int, n_sample: int) -> None:
        ref = self.actors[index].collect.remote(self._weights_ref(self.version), n_sample, False)
        self._pending[ref] = (index, self.version)

    def _cancel_pending(self) -> None:
        """Async collections in flight are dropped when the run switches to a synchronous step or resets."""
        import ray
        pending = list(self._pending) + (self._ahead.refs if self._ahead else [])
        if pending:
            ray.wait(pending, num_returns=len(pending))
        self._pending.clear()
        self._ahead = None

    # ----- weights and statistics -----------------------------------------------------------
    def _weights_ref(self, version: int) -> Any:
        """The weights of `version` in the object store: the current ones are put there once per version."""
        import ray
        if version not in self._sent_refs:
            weights = to_cpu(self.policy.weights())
            self._sent[version] = weights
            self._sent_refs[version] = ray.put(weights)
        return self._sent_refs[version]

    def _forget_versions(self) -> None:
        live = {version for _, version in self._pending.values()} | {self.version}
        live |= {self._ahead.version} if self._ahead else set()
        for version in [v for v in self._sent if v not in live]:
            del self._sent[version], self._sent_refs[version]

    def _merge_statistics(self, updated: list[dict[str, Any]], version: int) -> None:
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
        if self.mode == 'sync':  # (async forgets the versions no collection in flight was sent)
            self._sent.clear()
            self._sent_refs.clear()

    def _count(self, result: dict[str, Any], steps: Optional[int] = None) -> None:
        """Count `steps` of every env of the worker (default all it took) and the episodes it finished."""
        self.env_step += (result['steps'] if steps is None else steps) * self.envs_per_worker
        self.episodes.returns.extend(result['episode_returns'])
        self.episodes.lengths.extend(result['episode_lengths'])
        self._seconds += result['seconds']

    # ----- faults ------------------------------------------------------------------------------
    def _recover(self, index: int, err: BaseException) -> None:
        """Log the failure, restart the worker if its process still runs, and start new episodes."""
        import ray
        self._failures[index] += 1
        self._restarts += 1
        first = index * self.envs_per_worker
        where = (f'Ray worker {index} (collector envs {first}..{first + self.envs_per_worker - 1}) failed '
                 f'at env step {self.env_step}')
        cause = getattr(err, 'cause', None)
        if isinstance(cause, (PolicyError, ConfigError)):
            # the policy's or the config's own error fails the same way in a fresh process: no restart
            raise WorkerError(f'{where}: {one_line(cause)}') from None
        if self._failures[index] > self.max_restarts:
            raise WorkerError(f'{where}, {self._failures[index]} times in a row; stopping '
                              f'(collector.max_restarts={self.max_restarts}): {error_cause(err)}') from None
        self.notify(f'{where}: {error_cause(err)}; restarting it ({self._failures[index]} of '
                    f'{self.max_restarts} in a row)')
        actor = self.actors[index]
        if not isinstance(err, ray.exceptions.RayActorError):
            ray.kill(actor, no_restart=False)  # an env that raised may be broken: a fresh process
        self._await_restart(index)
        seed = stream_seed(self.seed, RESTART_STREAM, index, self._restarts) - first
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

    # ----- resume ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Counters, and in 'sync' mode (where no collection is in flight between calls) every worker's envs
        and acting stream, for an exact resume; an async run's workers are always mid-collection."""
        import ray
        state: dict[str, Any] = {
            'env_step': self.env_step, 'version': self.version,
            'episodes': {'returns': list(self.episodes.returns), 'lengths': list(self.episodes.lengths)},
            'env': {'reason': f"the envs of Ray workers are not saved in collector.mode='{self.mode}'"}}
        if self.mode == 'sync':
            state['workers'] = ray.get([actor.state_dict.remote() for actor in self.actors])
            state['env'] = {'reason': None}
        return state

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        """Counters back and, where the workers' envs were saved for as many workers, their episodes
        continued; otherwise new episodes (seeded from `fallback_seed`), and the reason is returned."""
        import ray
        self.env_step, self.version = state['env_step'], state.get('version', 0)
        self.episodes = EpisodeStats(list(state['episodes']['returns']), list(state['episodes']['lengths']))
        workers = state.get('workers')
        if workers is None or len(workers) != len(self.actors):
            self.reset(seed=fallback_seed)
            return state['env'].get('reason') or (f'the checkpoint has {len(workers)} Ray workers\' envs, this run '
                                                  f'{len(self.actors)} workers' if workers else 'no envs were saved')
        reasons = ray.get([actor.load_state_dict.remote(worker, fallback_seed)
                           for actor, worker in zip(self.actors, workers)])
        failed = [f'worker {index}: {reason}' for index, reason in enumerate(reasons) if reason]
        return '; '.join(failed) or None


@dataclass
class _Rollout:
    """A collection every worker was asked for: its result refs, steps per worker and weights' version."""

    refs: list[Any]
    per_worker: int
    version: int


def _interleave(samples: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """Workers' step-major rows as one step-major block over all their envs (worker 0's envs first)."""
    return tree_zip_map(lambda columns: _interleave_column(columns, steps), samples)


def _interleave_column(columns: list[np.ndarray], steps: int) -> np.ndarray:
    if len(columns) == 1:
        return np.array(columns[0])  # the object store's arrays are read-only; torch wants to own writable ones
    grids = [column.reshape(steps, -1, *column.shape[1:]) for column in columns]
    joined = np.concatenate(grids, axis=1)
    return joined.reshape(-1, *joined.shape[2:])


def error_cause(err: BaseException) -> str:
    """The worker's own error, in one line, without Ray's traceback."""
    cause = getattr(err, 'cause', None)
    if isinstance(cause, BaseException):
        return f'{type(cause).__name__}: {one_line(cause)}'
    return f'{type(err).__name__}: {one_line(err)}'
