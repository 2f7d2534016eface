"""Evaluation on a Ray actor of its own (`policy.eval.evaluator.on_ray`), off the run's critical path.

When an evaluation is due the run hands the actor the weights of that train iteration and goes on
training; the row is logged when the result arrives. The actor evaluates exactly as the run's own
evaluator would (same env seeds and acting stream per train iteration), so the rows equal a local run's.
At most one evaluation is in flight: one falling due while another runs first waits for it, so an
evaluation is never skipped or moved (evaluating more often than an evaluation lasts costs that wait,
reported as `eval_wait_seconds`). Checkpoints and the run's end wait for the evaluation in flight.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch
from easydict import EasyDict

from tidal.config.tree import to_plain
from tidal.base.nest import to_cpu, tree_map
from tidal.worker.evaluator import EvalResult, Evaluator
from tidal.worker.ray_cluster import connect_ray
from tidal.worker.ray_pool import WorkerError, error_cause
from tidal.worker.ray_worker import prepare_worker_process


class EvalWorker:
    """The run's evaluator in a process of its own: the policy's eval mode and the evaluator envs on CPU."""

    def __init__(self, cfg: dict, seed: int, import_path: list[str]) -> None:
        run_cfg = prepare_worker_process(cfg, import_path)
        from tidal.worker.builders import build_env_manager, build_policy  # after the path: it imports user modules
        self.policy = build_policy(run_cfg, enable_field=('eval',))
        self.evaluator = Evaluator(build_env_manager(run_cfg, 'evaluator', label='Ray eval actor'),
                                   self.policy.eval_mode, torch.device('cpu'), n_episode=run_cfg.env.n_evaluator_episode,
                                   eval_freq=1, seed=seed)

    def ping(self) -> bool:
        return True

    def evaluate(self, weights: dict[str, Any], train_iter: int, env_step: int) -> tuple[np.ndarray, np.ndarray]:
        """(returns, lengths) of the evaluation of `weights` at `train_iter`."""
        self.policy.load_weights(weights)
        result = self.evaluator.eval(train_iter, env_step)
        return result.returns, result.lengths


@dataclass
class Submitted:
    """An evaluation in flight and what its row needs from the moment it was due."""

    ref: Any
    train_iter: int
    env_step: int
    wall_time: float
    collected: list[float]  # returns of the training episodes finished since the previous evaluation
    policy_state: dict[str, Any]  # the learn-mode state evaluated: best.pt if it is the best


class RemoteEvaluation:
    """The driver's side: submit an evaluation, take the one in flight when it is done (or wait for it)."""

    def __init__(self, cfg: EasyDict, seed: int) -> None:
        import ray
        connect_ray(cfg)
        actor_cls = ray.remote(num_cpus=1, max_restarts=0)(EvalWorker)
        self.actor: Any = actor_cls.remote(to_plain(cfg), seed, [os.getcwd(), *sys.path])
        self.in_flight: Optional[Submitted] = None
        self.wait_seconds = 0.0  # the run's time spent waiting for an evaluation
        self._wait_ready()

    def submit(self, weights: dict[str, Any], train_iter: int, env_step: int, wall_time: float,
               collected: list[float], policy_state: dict[str, Any]) -> None:
        """Start the evaluation of `weights`; there must be none in flight (`take(wait=True)` first)."""
        assert self.in_flight is None, 'one evaluation at a time'
        ref = self.actor.evaluate.remote(to_cpu(weights), train_iter, env_step)
        snapshot = tree_map(lambda leaf: leaf.detach().cpu().clone() if isinstance(leaf, torch.Tensor) else leaf,
                            policy_state, sequences=True)  # training goes on in place
        self.in_flight = Submitted(ref, train_iter, env_step, wall_time, collected, snapshot)

    def take(self, wait: bool) -> Optional[tuple[Submitted, EvalResult]]:
        """The evaluation in flight with its result once it is done (waiting for it with `wait`), else None."""
        import ray
        if self.in_flight is None:
            return None
        if not wait and not ray.wait([self.in_flight.ref], timeout=0)[0]:
            return None
        start = time.monotonic()
        returns, lengths = ray.get(self.in_flight.ref)
        self.wait_seconds += time.monotonic() - start
        done, self.in_flight = self.in_flight, None
        return done, EvalResult(np.asarray(returns), np.asarray(lengths))

    def _wait_ready(self) -> None:
        """Block until the actor is built, or raise its error in one line."""
        import ray
        try:
            ray.get(self.actor.ping.remote())
        except ray.exceptions.RayActorError as err:
            raise WorkerError(f'the Ray eval actor could not be built: {error_cause(err)}') from None

    def close(self) -> None:
        import ray
        ray.kill(self.actor, no_restart=True)
