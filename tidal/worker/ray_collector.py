"""The collector on Ray: a `WorkerPool` of rollout workers driven with the local collector's interface, one class
per `collector.mode` (`build_ray_collector` picks it).

Every worker steps its own vector env with the weights it is sent, and the samples come back as numpy columns.
- 'sync' (`SyncRayCollector`): a collection waits for all workers and interleaves their rows step-major over the
  run's envs, exactly as the local collector lays them out (one worker acts exactly as the local collector: same
  env seeds, same acting stream).
- 'async', off-policy (`ApeXRayCollector`, Ape-X): each worker starts its next collection as soon as it hands one
  in, with the newest weights, and `collect` returns the first batch that is ready; the rounds of learning a
  batch's weights are behind the learner (its staleness) are logged and bounded by `max_staleness`.
- 'async', on-policy (`RolloutAheadRayCollector`, for a feed with `rollout_ahead`, as IMPALA and Sample Factory do
  it): each worker starts its share of the next rollout as soon as it hands in its share of this one, with the
  learner's weights before it learns from this one, so the next rollout is collected while the learner trains.
  Every rollout but the first reaches the learner exactly one rollout behind its weights (logged as
  `policy_lag`); its rows carry the behaviour policy's log-probabilities, which PPO's ratio is taken against. A
  rollout asked for with fewer steps than were collected ahead (the run's last, cut to its budget) is cut to them.
The warm-up's random collections are synchronous in every mode.
"""
from __future__ import annotations

import sys
import time
from collections import deque
from typing import Any, Callable, Optional

import numpy as np
import torch
from easydict import EasyDict

from tidal.base.collector import EpisodeStats
from tidal.base.modes import CollectView
from tidal.base.nest import to_tensor, tree_map, tree_zip_map
from tidal.worker.collector import steps_per_env
from tidal.worker.ray_pool import Rollout, WorkerPool
from tidal.worker.rng import stream_seed


def build_ray_collector(cfg: EasyDict, policy: CollectView, device: torch.device, rollout_ahead: bool = False,
                        notify: Optional[Callable[[str], None]] = None) -> RayCollector:
    """The collector of `collector.mode`; `rollout_ahead`: in 'async' mode, collect whole rollouts one ahead of the
    learner (on-policy feeds). `notify` is told of restarted workers (default: stderr)."""
    if cfg.collector.mode == 'sync':
        return SyncRayCollector(cfg, policy, device, notify)
    if rollout_ahead:
        return RolloutAheadRayCollector(cfg, policy, device, notify)
    return ApeXRayCollector(cfg, policy, device, notify)


def _print_notice(message: str) -> None:
    print(f'tidal: {message}', file=sys.stderr, flush=True)


class RayCollector:
    """What the modes share: the collector interface over the pool, counting, and synchronous collections."""

    mode = 'sync'

    def __init__(self, cfg: EasyDict, policy: CollectView, device: torch.device,
                 notify: Optional[Callable[[str], None]] = None) -> None:
        self.device = device
        self.env_step = 0
        self.episodes = EpisodeStats()
        self._seconds = 0.0  # the workers' own seconds of collecting
        self._learner_waited = 0.0  # the learner's seconds in `collect`: the samples it waited for and received
        self.pool = WorkerPool(cfg, policy, lambda: self.env_step, notify or _print_notice)

    @property
    def num_envs(self) -> int:
        return self.pool.num_envs

    def close(self) -> None:
        self.pool.close()

    def reset(self, seed: Optional[int] = None) -> None:
        """New episodes in every worker's envs; env i is seeded with `seed + i`, as locally."""
        self._cancel_pending()
        self.pool.reset(stream_seed(self.pool.seed) if seed is None else seed)

    def collect(self, n_sample: int, random: bool = False) -> dict[str, Any]:
        """At least `n_sample` env steps of training samples; see the module docstring for the modes."""
        start = time.monotonic()
        try:
            return self._collect(n_sample, random)
        finally:
            self._learner_waited += time.monotonic() - start

    def _collect(self, n_sample: int, random: bool) -> dict[str, Any]:
        raise NotImplementedError

    def monitor(self) -> dict[str, float]:
        """Collection figures for the train log: restarts, the workers' seconds collecting and the learner's seconds
        waiting for them (near 0: the learner is the limit)."""
        return {'collector_restarts': float(self.pool.restarts), 'collect_seconds': self._seconds,
                'learner_wait_seconds': self._learner_waited}

    def _collect_every_worker(self, n_sample: int, random: bool) -> dict[str, Any]:
        """Every worker's share of `n_sample` with the current weights, interleaved as the local collector would."""
        self._cancel_pending()
        pool = self.pool
        rollout = pool.launch(n_sample, random)
        results = pool.gather(rollout.refs, rollout.per_worker, random)
        pool.merge_statistics([result['statistics'] for result in results], pool.version)
        for result in results:
            self._count(result)
        pool.version += 0 if random else 1
        return to_tensor(_interleave([result['sample'] for result in results], results[0]['steps']), self.device)

    def _cancel_pending(self) -> None:
        """Drop the collections in flight (an async mode's) when the run resets or collects synchronously."""

    def _count(self, result: dict[str, Any], steps: Optional[int] = None) -> None:
        """Count `steps` of every env of the worker (default all it took) and the episodes it finished."""
        self.env_step += (result['steps'] if steps is None else steps) * self.pool.envs_per_worker
        self.episodes.returns.extend(result['episode_returns'])
        self.episodes.lengths.extend(result['episode_lengths'])
        self._seconds += result['seconds']

    # ----- resume ------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Counters; an async run's workers are always mid-collection, so their envs are not saved."""
        return {
            'env_step': self.env_step, 'version': self.pool.version,
            'episodes': {'returns': list(self.episodes.returns), 'lengths': list(self.episodes.lengths)},
            'env': {'reason': f"the envs of Ray workers are not saved in collector.mode='{self.mode}'"}}

    def load_state_dict(self, state: dict[str, Any], fallback_seed: int) -> Optional[str]:
        """Counters back and, where the workers' envs were saved for as many workers, their episodes
        continued; otherwise new episodes (seeded from `fallback_seed`), and the reason is returned."""
        self.env_step, self.pool.version = state['env_step'], state.get('version', 0)
        self.episodes = EpisodeStats(list(state['episodes']['returns']), list(state['episodes']['lengths']))
        workers = state.get('workers')
        actors = len(self.pool.actors)
        if workers is None or len(workers) != actors:
            self.reset(seed=fallback_seed)
            return state['env'].get('reason') or (f'the checkpoint has {len(workers)} Ray workers\' envs, this run '
                                                  f'{actors} workers' if workers else 'no envs were saved')
        return self.pool.load_worker_states(workers, fallback_seed)


class SyncRayCollector(RayCollector):
    """'sync': every collection waits for every worker; between collections nothing is in flight, so a checkpoint
    holds every worker's envs and acting stream (an exact resume)."""

    def _collect(self, n_sample: int, random: bool) -> dict[str, Any]:
        sample = self._collect_every_worker(n_sample, random)
        self.pool.keep_versions(set())  # no collection is in flight between calls
        return sample

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state['workers'] = self.pool.worker_states()
        state['env'] = {'reason': None}
        return state


class ApeXRayCollector(RayCollector):
    """'async', off-policy: the first batch a worker hands in, the workers collecting on while the learner trains."""

    mode = 'async'

    def __init__(self, cfg: EasyDict, policy: CollectView, device: torch.device,
                 notify: Optional[Callable[[str], None]] = None) -> None:
        super().__init__(cfg, policy, device, notify)
        self.max_staleness = cfg.collector.max_staleness
        self._pending: dict[Any, tuple[int, int]] = {}  # ref -> (worker, version)
        self._staleness: deque[int] = deque(maxlen=1000)
        self._dropped = 0

    def _collect(self, n_sample: int, random: bool) -> dict[str, Any]:
        """The first batch a worker hands in whose weights are at most `max_staleness` rounds behind."""
        import ray
        if random:
            return self._collect_every_worker(n_sample, random)
        pool = self.pool
        for index in range(len(pool.actors)):
            if index not in {worker for worker, _ in self._pending.values()}:
                self._launch(index, n_sample)
        while True:
            ready, _ = ray.wait(list(self._pending), num_returns=1)
            index, version = self._pending.pop(ready[0])
            result = pool.result(index, ready[0])
            self._launch(index, n_sample)  # collecting goes on while the learner trains on this batch
            if result is None:
                continue
            self._count(result)
            staleness = pool.version - version
            self._staleness.append(staleness)
            if staleness > self.max_staleness:
                self._dropped += result['steps'] * pool.envs_per_worker
                continue
            pool.merge_statistics([result['statistics']], version)
            pool.keep_versions({version for _, version in self._pending.values()} | {pool.version})
            pool.version += 1
            return to_tensor(_interleave([result['sample']], result['steps']), self.device)

    def _launch(self, index: int, n_sample: int) -> None:
        self._pending[self.pool.run(index, n_sample, False)] = (index, self.pool.version)

    def _cancel_pending(self) -> None:
        import ray
        pending = list(self._pending)
        if pending:
            ray.wait(pending, num_returns=len(pending))
        self._pending.clear()

    def monitor(self) -> dict[str, float]:
        """Also the batches' staleness and the rows dropped for it."""
        values = super().monitor()
        if self._staleness:
            values['staleness_mean'] = float(np.mean(self._staleness))
            values['staleness_max'] = float(np.max(self._staleness))
            values['dropped_stale_steps'] = float(self._dropped)
        return values


class RolloutAheadRayCollector(RayCollector):
    """'async', on-policy: whole rollouts collected one ahead of the learner."""

    mode = 'async'

    def __init__(self, cfg: EasyDict, policy: CollectView, device: torch.device,
                 notify: Optional[Callable[[str], None]] = None) -> None:
        super().__init__(cfg, policy, device, notify)
        self._ahead: Optional[Rollout] = None  # the rollout being collected for the next call
        self._lag: Optional[int] = None  # learner rounds the latest rollout's weights were behind

    def _collect(self, n_sample: int, random: bool) -> dict[str, Any]:
        """The rollout collected ahead (the first call collects one). Each worker starts its share of the next
        rollout, with the current weights, as soon as it hands in its share of this one (no worker waits for
        the slowest), so the workers collect that rollout while the learner trains on this one."""
        if random:
            return self._collect_every_worker(n_sample, random)
        pool = self.pool
        rollout = self._ahead or pool.launch(n_sample, False)
        per_worker = pool.share(n_sample)
        results, next_refs = self._gather_relaunching(rollout, per_worker)
        self._ahead = Rollout(next_refs, per_worker, pool.version)
        steps = min(results[0]['steps'], steps_per_env(n_sample, self.num_envs))
        for result in results:
            self._count(result, steps)
        pool.merge_statistics([result['statistics'] for result in results], rollout.version)
        self._lag = pool.version - rollout.version
        pool.version += 1
        pool.keep_versions({pool.version, self._ahead.version})
        sample = _interleave([result['sample'] for result in results], results[0]['steps'])
        return to_tensor(tree_map(lambda column: column[:steps * self.num_envs], sample), self.device)

    def _gather_relaunching(self, rollout: Rollout, per_worker: int) -> tuple[list[dict[str, Any]], list[Any]]:
        """Every worker's share of `rollout`, in the order they finish, and the refs of the next rollout: a worker
        that hands in its share starts `per_worker` steps of it at once; a failed one is restarted and does its
        share again with the rollout's weights."""
        import ray
        pool = self.pool
        pending = {ref: index for index, ref in enumerate(rollout.refs)}
        results: list[Optional[dict[str, Any]]] = [None] * len(pool.actors)
        next_refs: list[Any] = [None] * len(pool.actors)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            index = pending.pop(ready[0])
            results[index] = pool.result(index, ready[0])
            if results[index] is None:
                pending[pool.run(index, rollout.per_worker, False, rollout.version)] = index
                continue
            next_refs[index] = pool.run(index, per_worker, False)
        return [result for result in results if result is not None], next_refs

    def _cancel_pending(self) -> None:
        import ray
        pending = self._ahead.refs if self._ahead else []
        if pending:
            ray.wait(pending, num_returns=len(pending))
        self._ahead = None

    def monitor(self) -> dict[str, float]:
        """Also the policy lag of the latest rollout."""
        values = super().monitor()
        if self._lag is not None:
            values['policy_lag'] = float(self._lag)
        return values


def _interleave(samples: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """Workers' step-major rows as one step-major block over all their envs (worker 0's envs first)."""
    return tree_zip_map(lambda columns: _interleave_column(columns, steps), samples)


def _interleave_column(columns: list[np.ndarray], steps: int) -> np.ndarray:
    if len(columns) == 1:
        return np.array(columns[0])  # the object store's arrays are read-only; torch wants to own writable ones
    grids = [column.reshape(steps, -1, *column.shape[1:]) for column in columns]
    joined = np.concatenate(grids, axis=1)
    return joined.reshape(-1, *joined.shape[2:])
