"""A run's evaluations, in its process or on the eval actor (`policy.eval.evaluator.on_ray`): their rows in the log,
the best return and its checkpoint, and whether the stop value was reached."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Optional

from easydict import EasyDict

from tidal.base.policy import PolicyLike
from tidal.entry.run_checkpoints import CheckpointSchedule
from tidal.entry.run_log import Clock, RunReport
from tidal.entry.run_videos import EvalVideos
from tidal.worker.evaluator import EvalResult, Evaluator

if TYPE_CHECKING:
    from tidal.worker.ray_evaluator import RemoteEvaluation


def remote_evaluation(cfg: EasyDict, seed: int) -> RemoteEvaluation:
    """The eval actor of `policy.eval.evaluator.on_ray` (Ray is an optional extra: imported only then)."""
    from tidal.worker.ray_evaluator import RemoteEvaluation
    return RemoteEvaluation(cfg, seed)


class RunEvaluation:
    """Rank 0 evaluates, with `evaluator` here or on `remote` (one evaluation in flight at a time)."""

    def __init__(self, evaluator: Evaluator, remote: Optional[RemoteEvaluation], policy: PolicyLike, report: RunReport,
                 checkpoints: CheckpointSchedule, videos: EvalVideos, clock: Clock,
                 on_eval: Optional[Callable[[dict[str, float]], None]],
                 ref_scores: Optional[tuple[float, float]] = None) -> None:
        """`on_eval` sees each evaluation's row of evals.csv (a tuner prunes a trial by raising from it).
        `ref_scores`: the returns of a random and an expert policy, which put each evaluation's mean return on
        D4RL's normalised score, 100 (R - random) / (expert - random), beside it."""
        self.ref_scores = ref_scores
        self.evaluator, self.remote, self.policy = evaluator, remote, policy
        self._report, self._checkpoints, self._videos, self._clock = report, checkpoints, videos, clock
        self._on_eval = on_eval
        self.evals_done = 0  # evaluations so far (a resumed run keeps counting): which ones record a video
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.stop_reached = False  # an evaluation (on the actor, perhaps) reached the stop value

    def run(self, train_iter: int, env_step: int, collected: list[float]) -> bool:
        """Evaluate the current weights here, or hand them to the actor; True when the stop value is reached.
        `collected`: the returns of the training episodes since the last evaluation."""
        if self.remote is not None:
            self.take_remote(wait=True)  # one in flight at a time
            self.evaluator.mark_evaluated(train_iter, env_step)
            self.remote.submit(self.policy.weights(), train_iter, env_step, self._clock.wall_time(), collected,
                               self.policy.learn_mode.state_dict())
            return self.stop_reached
        result = self.evaluator.eval(train_iter, env_step, self.videos_due(env_step))
        self._record(result, train_iter, env_step, self._clock.wall_time(), collected)
        return self.stop_reached

    def take_remote(self, wait: bool) -> None:
        """Record the eval actor's evaluation once it is done (waiting for it with `wait`)."""
        done = self.remote.take(wait) if self.remote is not None else None
        if done is not None:
            submitted, result = done
            self._record(result, submitted.train_iter, submitted.env_step, submitted.wall_time,
                         submitted.collected, submitted.policy_state)

    def videos_due(self, env_step: int) -> list[Path]:
        return self._videos.due(self.evals_done, env_step)

    def monitor(self) -> dict[str, float]:
        """For the train log: the learner's seconds waiting for the eval actor."""
        return {'eval_wait_seconds': self.remote.wait_seconds} if self.remote is not None else {}

    def close(self) -> None:
        """Close the evaluator's envs (and the eval actor)."""
        if self.evaluator.env is not None:
            self.evaluator.env.close()
        if self.remote is not None:
            self.remote.close()

    def _record(self, result: EvalResult, train_iter: int, env_step: int, wall_time: float,
                collected: list[float], policy_state: Optional[dict[str, Any]] = None) -> None:
        """Log an evaluation's row, plot, keep the best checkpoint (`policy_state`: what was evaluated, default
        the current state), and note when it reached the stop value."""
        self.evals_done += 1
        self.last_return = result.return_mean
        collect_return = sum(collected) / len(collected) if collected else float('nan')
        row = result.row(env_step, train_iter, wall_time, collect_return)
        if self.ref_scores is not None:
            row['normalized_return_mean'] = normalized_score(result.return_mean, self.ref_scores)
        self._report.logger.evaluation(row)
        if result.return_mean > self.best_return:
            self.best_return = result.return_mean
            self._checkpoints.write_best(policy_state or self.policy.learn_mode.state_dict(), env_step, train_iter,
                                         self.best_return)
        self._report.plot_if_due()
        progress = {'iter': train_iter, 'eval_return': f'{result.return_mean:.1f}'}
        if 'normalized_return_mean' in row:
            progress['score'] = f"{row['normalized_return_mean']:.1f}"
        if collected:
            progress['collect_return'] = f'{collect_return:.1f}'
        self._report.show(progress)
        if self._on_eval is not None:
            self._on_eval(row)
        self.stop_reached |= self.evaluator.reached_stop_value(result)


def normalized_score(episode_return: float, ref_scores: tuple[float, float]) -> float:
    """D4RL's normalised score: 0 at the random policy's return, 100 at the expert's."""
    low, high = ref_scores
    return 100.0 * (episode_return - low) / (high - low)
