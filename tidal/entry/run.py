"""The run shell every training loop shares: run folder, evaluation, logs, checkpoints, resume.

What differs between algorithm families is only where their training data comes from, and that is
a `DataFeed` (replay for off-policy learning, half demonstrations for SQIL, ...). The shell drives a
feed one `step` at a time and does everything else at the top of its loop, the one point where the
whole run's state is consistent: evaluate when due, checkpoint when due (after the warm-up, every
`save_ckpt_freq` iterations or `save_ckpt_freq_env_steps` env steps or `save_ckpt_secs` seconds, on
SIGTERM / SIGINT), stop when done. Evaluations and logs are due by train iterations or env steps too.

Every log event after a checkpoint comes after at least one more collection, so it is stepped by a
later env step than any event before it: that is what lets a resumed run drop exactly what the
killed process wrote after its checkpoint.

Under torchrun (several learner processes) rank 0 alone evaluates and writes the run folder, env steps
count all ranks (logs, summary, `--max-env-step`), and `tidal.worker.distributed.Lockstep` keeps the
ranks in step: the same decisions at the top of the loop, every rank's state in the checkpoint.
"""
from __future__ import annotations

import signal
import time
from pathlib import Path
from typing import Any, Callable, NoReturn, Optional

import torch
from easydict import EasyDict

from tidal.base.device import policy_device
from tidal.base.errors import TidalError
from tidal.base.feed import FeedClass
from tidal.entry.run_checkpoints import CheckpointSchedule
from tidal.entry.run_evaluation import RunEvaluation, normalized_score, remote_evaluation
from tidal.entry.run_log import Clock, CollectReturns, RunReport, TrainLog
from tidal.entry.run_videos import EvalVideos
from tidal.entry.policy import build_policy
from tidal.entry.setup import check_budget
from tidal.policies.base import Policy
from tidal.registry import feed_class, policy_class
from tidal.worker.builders import EVALUATOR_SEED_OFFSET, build_env_manager, configure_torch, set_seed
from tidal.worker.collectors import build_collector
from tidal.worker.distributed import Lockstep, NullLogger, init_distributed, shutdown_distributed
from tidal.worker.evaluator import Evaluator
from tidal.worker.finite import NonFiniteError
from tidal.worker.learner import Learner, Period
from tidal.worker.logger import RunLogger
from tidal.worker.rng import rng_state, set_rng_state, stream_seed
from tidal.worker.tracking import backends, check_backends, open_trackers
from tidal.worker.update_recorder import UpdateRecorder


class RunInterrupted(TidalError):
    """SIGTERM or SIGINT stopped the run after it saved a checkpoint."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class RunFolderError(TidalError):
    """The run folder cannot be written (disk full, read-only, permissions)."""


class Run:
    """One training run: its parts, counters and run folder. `train()` runs it to the end.

    The parts each keep one job: `checkpoints` (when the latest is due, its files), `evaluation` (evaluations, the
    best return), `report` (log, progress bar, curve), `returns` (the training episodes' returns both logs report);
    the run holds the loop, what a checkpoint holds and how the run ends."""

    def __init__(self, cfg: EasyDict, run_dir: Path, feed_cls: FeedClass,
                 max_env_step: Optional[int] = None, max_train_iter: Optional[int] = None,
                 progress: bool = True, resume_state: Optional[dict[str, Any]] = None,
                 on_eval: Optional[Callable[[dict[str, float]], None]] = None, record_updates: bool = False) -> None:
        """`on_eval` sees each evaluation's row of evals.csv (a tuner prunes a trial by raising from it).
        `record_updates`: the feed's updates are written down (`self.recorder`) for a seed group to make."""
        check_budget(cfg, max_env_step, max_train_iter, feed_cls)
        self.cfg, self.run_dir = cfg, Path(run_dir)
        self.max_env_step, self.max_train_iter, self.progress = max_env_step, max_train_iter, progress
        configure_torch(cfg)
        self.dist = init_distributed(policy_device(cfg.policy))
        if self.dist.is_main:
            check_backends(cfg)  # a missing package or tracking server, before anything is built
        self.lockstep = Lockstep(self.dist)
        rank_cfg = self.lockstep.rank_config(cfg)
        self.seed = rank_cfg.seed  # this rank's: its global generators, collector envs and buffers
        self.offline = feed_cls.spec(cfg).offline
        set_seed(self.seed)
        self.policy = build_policy(rank_cfg)
        # events the user should see now (a Ray collector's restarted workers) go to the run's log and stderr
        self.collector = build_collector(rank_cfg, self.policy, notify=lambda message: self.report.notify(message))
        evaluator_cfg, learner_cfg = cfg.policy.eval.evaluator, cfg.policy.learn.learner
        recording = evaluator_cfg.video_every > 0 and self.dist.is_main
        # rank 0 evaluates, here or on a Ray actor of its own (policy.eval.evaluator.on_ray)
        remote_eval = (remote_evaluation(cfg, cfg.seed + EVALUATOR_SEED_OFFSET)
                       if evaluator_cfg.on_ray and self.dist.is_main else None)
        self.evaluator = Evaluator(None if remote_eval else build_env_manager(cfg, 'evaluator', render=recording),
                                   self.policy.eval_mode, self.policy.device,
                                   n_episode=cfg.env.n_evaluator_episode, eval_freq=evaluator_cfg.eval_freq,
                                   eval_freq_env_steps=evaluator_cfg.eval_freq_env_steps,
                                   stop_value=cfg.env.stop_value, seed=cfg.seed + EVALUATOR_SEED_OFFSET)
        self.learner = Learner(self.policy.learn_mode, self.policy.device)
        self.recorder = UpdateRecorder(self.learner) if record_updates else None
        self.feed = feed_cls(rank_cfg, self.policy.views(), self.collector, self.recorder or self.learner)
        own = self.feed.train_iter_budget()
        if own is not None and resume_state is None:  # a resumed run keeps the budget it saved
            self.max_train_iter = own if max_train_iter is None else min(own, max_train_iter)
        log_state = resume_state['log'] if resume_state else None
        logger: RunLogger | NullLogger = (
            RunLogger(self.run_dir, log_state, open_trackers(cfg, self.run_dir, log_state),
                      tensorboard='tensorboard' in backends(cfg), clock='train_iter' if self.offline else 'env_step')
            if self.dist.is_main else NullLogger())
        self.report = RunReport(self.run_dir, f'{cfg.exp_name}', logger)
        videos = EvalVideos(self.run_dir, evaluator_cfg.video_every, self.dist.is_main, self.report.notify)
        self.clock = Clock()
        self._end_reason: Optional[str] = None  # set when an error stops the run
        self.checkpoints = CheckpointSchedule(self.run_dir, learner_cfg.save_ckpt_secs)
        self.evaluation = RunEvaluation(self.evaluator, remote_eval, self.policy, self.report, self.checkpoints,
                                        videos, self.clock, on_eval, self.feed.reference_scores())
        self.returns = CollectReturns(self.collector)
        self._periods = {  # of the learner's hooks
            'log': Period(learner_cfg.log_freq, learner_cfg.log_freq_env_steps, lambda: self.env_step),
            'save': Period(learner_cfg.save_ckpt_freq, learner_cfg.save_ckpt_freq_env_steps, lambda: self.env_step)}
        self.learner.register_hook(TrainLog(logger, self.collector, self.returns, lambda: self.log_step,
                                            self.check_finite, self.evaluation.monitor), self._periods['log'])
        self.learner.register_hook(lambda learner, info: self.checkpoints.request(), self._periods['save'])
        if resume_state is None:
            self.collector.reset(seed=stream_seed(self.seed))
        else:
            self._restore(resume_state)
        self.lockstep.start(self.policy.views())  # rank 0's weights on every rank, gradients averaged

    # ----- checkpoints -----------------------------------------------------------------------
    def _latest_state(self, finished: Optional[str]) -> dict[str, Any]:
        """Everything an exact resume needs, taken at the top of the loop (under DDP with the collector,
        feed and generators of ranks > 0 under 'ranks'; gathered on every rank, kept on rank 0)."""
        own = {'collector': self.collector.state_dict(), 'feed': self.feed.state_dict(), 'rng': rng_state()}
        evaluation = self.evaluation
        return {
            'policy': self.policy.learn_mode.state_dict(), **own, 'train_iter': self.learner.train_iter,
            'last_eval_iter': self.evaluator.last_eval_iter, 'last_eval_env_step': self.evaluator.last_eval_env_step,
            'evals_done': evaluation.evals_done,
            'hook_env_steps': {name: period.last_env_step for name, period in self._periods.items()},
            'best_return': evaluation.best_return, 'last_return': evaluation.last_return,
            'collect_returns': self.returns.state_dict(),
            'max_env_step': self.max_env_step, 'max_train_iter': self.max_train_iter,
            'wall_time': self.clock.wall_time(), 'log': self.report.logger.position(self.log_step),
            'finished': finished, 'world_size': self.dist.world_size, 'ranks': self.lockstep.gather(lambda: own),
        }

    def _save_latest(self, finished: Optional[str] = None) -> None:
        self.check_finite()  # never replace the last good checkpoint by a diverged one
        self.evaluation.take_remote(wait=True)  # the checkpoint holds every evaluation submitted before it
        self.checkpoints.write_latest(self._latest_state(finished), self.learner.train_iter, self.dist.is_main)

    def _restore(self, state: dict[str, Any]) -> None:
        own = self.lockstep.own_state(state)  # this rank's collector, feed and generators
        self.policy.learn_mode.load_state_dict(state['policy'])
        self.feed.load_state_dict(own['feed'])
        self.learner.restart_guard_at(state['train_iter'])
        self.evaluator.mark_evaluated(state['last_eval_iter'], state.get('last_eval_env_step', 0))
        self.evaluation.evals_done = state.get('evals_done', 0)
        for name, last_env_step in state.get('hook_env_steps', {}).items():
            self._periods[name].last_env_step = last_env_step
        self.evaluation.best_return, self.evaluation.last_return = state['best_return'], state['last_return']
        self.returns.load_state_dict(state.get('collect_returns', {}))  # absent before evals.csv had them
        self.clock.elapsed = state['wall_time']
        self.checkpoints.resumed_at(state['train_iter'])
        restarted = self.collector.load_state_dict(own['collector'],
                                                   fallback_seed=stream_seed(self.seed, own['collector']['env_step']))
        set_rng_state(own['rng'])
        resumed = f'resumed at env step {self.env_step}, train iteration {state["train_iter"]}'
        self.report.logger.info(resumed)
        if self.dist.is_main:
            print(f'tidal: {self.run_dir}: {resumed}', flush=True)
        if restarted:
            rank = f' of rank {self.dist.rank}' if self.dist.enabled else ''
            message = f'resume: the collector envs{rank} restart their episodes ({restarted})'
            self.report.logger.info(message)
            print(f'tidal: {message}', flush=True)

    def request_checkpoint(self) -> None:
        """Save at the next top of the loop, where the run's state is consistent (the learner's save period asks,
        and a seed group asks all its seeds when one is due)."""
        self.checkpoints.request()

    def checkpoint_due(self) -> bool:
        return self.checkpoints.due()

    # ----- the loop --------------------------------------------------------------------------
    def train(self, on_step: Optional[Callable[[], None]] = None) -> Policy:
        """Run to the end; `on_step()` after each feed step (a seed group's worker reports its progress there)."""
        self.begin()
        restore_signals = self.lockstep.catch_signals()
        outcome = 'stopped by an error'
        try:
            outcome = self._loop(on_step)
            self.conclude(outcome)
        except BaseException as err:
            outcome, error = self.failed(err)
            if error is not err:
                raise error from None
            raise
        finally:
            restore_signals()
            self.close(outcome)
        return self.policy

    def begin(self) -> None:
        """Start the clocks and the progress bar; then `top_of_loop` and `feed_step` alternate."""
        now = time.monotonic()
        self.clock.start(now)
        self.checkpoints.start(now)
        header = run_header(self.cfg, self.policy.device, self.dist.world_size)
        self.report.logger.info(f'training {self.cfg.policy.type} on {self.cfg.env.env_id} in {self.run_dir} '
                         f'(seed {self.cfg.seed}); {header}')
        if self.dist.is_main and self.recorder is None:  # a seed group says it once for its seeds
            print(f'tidal: training {self.cfg.policy.type} on {self.cfg.env.env_id} (seed {self.cfg.seed}) in '
                  f'{self.run_dir}: {header}', flush=True)
        total = self.max_train_iter if self.offline else self.max_env_step
        self.report.open_bar(total, self.log_step, self.progress and self.dist.is_main)

    def _loop(self, on_step: Optional[Callable[[], None]]) -> str:
        """Run until done; returns why the run ended."""
        while True:
            ended = self.top_of_loop()
            if ended is not None:
                return ended
            self.feed_step()
            if on_step is not None:
                on_step()

    def top_of_loop(self) -> Optional[str]:
        """Evaluate, checkpoint and stop where due; returns why the run ended, or None to go on."""
        decision = self.lockstep.decide(self._evaluate_if_due, self.checkpoint_due, self.collector.env_step)
        if decision.signum:
            self._save_latest()
            name = signal.Signals(decision.signum).name
            raise RunInterrupted(f'{name} at env step {self.env_step}: checkpoint saved; continue '
                                 f'with: tidal resume {self.run_dir}', decision.signum)
        if decision.stop:
            return f'stop value {self.evaluator.stop_value} reached'
        if decision.save:
            self._save_latest()
        return self._budget_spent()

    def feed_step(self) -> None:
        """One step of the data feed (collect, learn), within the env steps left."""
        warm = self.feed.warmed_up()
        try:
            self.feed.step(self.env_budget())
        except Exception as err:
            self.fail_step(err)
        if warm != self.feed.warmed_up():  # checkpoint right after the warm-up
            self.checkpoints.request()
        self.report.advance(self.log_step)

    def env_budget(self) -> Optional[int]:
        """Env steps left of this rank's budget (None: no env-step budget)."""
        return self.lockstep.env_budget(self.max_env_step, self.env_step)

    def fail_step(self, err: Exception) -> NoReturn:
        """Raise the error that `err`, raised by a feed step (or by a seed group's collection for this seed), stands
        for: a NaN action, env value or sampling error usually follows a NaN update, which is named first; a
        non-finite action names the last good checkpoint; any other error is raised as it is."""
        self.check_finite()
        if isinstance(err, NonFiniteError):
            raise NonFiniteError(f'{err}; {self.checkpoints.last_good()}') from err
        raise err

    @property
    def env_step(self) -> int:
        """Env steps of the whole run: the sum over the ranks, which collect in lockstep."""
        return self.collector.env_step * self.dist.world_size

    @property
    def log_step(self) -> int:
        """What the logs and the progress bar count: env steps, or train iterations in a run that learns offline
        (its env steps stay 0). It only moves forward, across a resume too."""
        return self.learner.train_iter if self.offline else self.env_step

    def _budget_spent(self) -> Optional[str]:
        """Which budget is spent, if one is."""
        if self.max_env_step is not None and self.env_step >= self.max_env_step:
            return f'budget of {self.max_env_step} env steps reached'
        if self.max_train_iter is not None and self.learner.train_iter >= self.max_train_iter:
            return f'budget of {self.max_train_iter} train iterations reached'
        return None

    # ----- evaluations ------------------------------------------------------------------------
    def eval_due(self) -> bool:
        """Whether the top of the loop evaluates here (always after the warm-up, when the schedule says so)."""
        return self.feed.warmed_up() and self.evaluator.should_eval(self.learner.train_iter, self.env_step)

    def concluding_eval_due(self) -> bool:
        """Whether `conclude` evaluates: the last update was not evaluated."""
        return self.evaluator.last_eval_iter != self.learner.train_iter

    def _evaluate_if_due(self) -> bool:
        """Take an evaluation the actor finished, evaluate when due; True once the stop value is reached."""
        self.evaluation.take_remote(wait=False)
        return self.evaluation.stop_reached or (self.eval_due() and self._evaluate())

    def _evaluate(self) -> bool:
        """Evaluate (rank 0 only), here or on the eval actor; True when the stop value is reached."""
        collected = self.returns.for_eval()
        train_iter, env_step = self.learner.train_iter, self.env_step
        if not self.dist.is_main:
            self.evaluator.mark_evaluated(train_iter, env_step)
            return False
        self.check_finite()
        return self.evaluation.run(train_iter, env_step, collected)

    # ----- finite or stop --------------------------------------------------------------------
    def check_finite(self) -> None:
        """Stop at the first NaN or inf in a monitored value or a parameter, naming it."""
        self.learner.check_finite(self.policy.model, self.env_step, self.checkpoints.last_good())

    # ----- endings --------------------------------------------------------------------------
    def conclude(self, outcome: str) -> None:
        """The run's last evaluation (unless its last update was evaluated) and final checkpoint."""
        if self.concluding_eval_due():
            self._evaluate()
        self._save_latest(finished=outcome)  # after the last evaluation's row (one on the actor is waited for)

    def failed(self, err: BaseException) -> tuple[str, BaseException]:
        """Log the error that stopped the run; returns how the run ended and the error to raise (a run folder
        that cannot be written becomes one RunFolderError line)."""
        try:
            self.report.logger.exception(f'run stopped: {type(err).__name__}: {err}', err)
        except (OSError, ValueError):  # the log itself cannot be written: the caller still sees the error
            pass
        if isinstance(err, OSError):
            err = RunFolderError(f"cannot write to the run folder '{self.run_dir}': {err.strerror or err}"
                                 + (f" ('{err.filename}')" if err.filename else ''))
        outcome = f'stopped: {err}' if isinstance(err, TidalError) else f'stopped by {type(err).__name__}'
        # the end line names the stop and the error's own line says the rest, once
        signum = getattr(err, 'signum', None)
        self._end_reason = (f'stopped by {signal.Signals(signum).name}' if signum else
                            'stopped by the error below' if isinstance(err, TidalError) else outcome)
        return outcome, err

    def close(self, outcome: str) -> None:
        """Write the summary, release the envs and say in one line how the run ended (rank 0)."""
        self.report.close_bar()
        report = self.report
        final_plot = report.plot if (self.run_dir / 'evals.csv').is_file() else (lambda: None)
        # the final curve before the logger closes: the tracking services get it then
        finishes = (lambda: self.report.logger.summary(self._summary(outcome)),
                    lambda: self.report.logger.info(f'run ended: {outcome}'), final_plot, self.report.logger.close)
        for finish in finishes if self.dist.is_main else ():
            try:
                finish()
            except (OSError, ValueError):  # a full or read-only folder: the run's error already says so
                pass
        self.release_envs()
        if self.dist.is_main:
            evaluation = self.evaluation
            last = 'none' if evaluation.last_return is None else f'{evaluation.last_return:.2f}'
            best = 'none' if evaluation.best_return == -float('inf') else f'{evaluation.best_return:.2f}'
            if evaluation.ref_scores is not None and evaluation.last_return is not None:
                best += f' (score {normalized_score(evaluation.best_return, evaluation.ref_scores):.1f})'
                last += f' (score {normalized_score(evaluation.last_return, evaluation.ref_scores):.1f})'
            where = f'train iteration {self.learner.train_iter}' if self.offline else f'env step {self.env_step}'
            print(f'tidal: run ended ({self._end_reason or outcome}) at {where}; eval return best {best}, last {last}; '
                  f"run folder {self.run_dir} ({self.run_dir / 'curve.png'}, {self.run_dir / 'ckpt' / 'best.pt'})",
                  flush=True)
        shutdown_distributed()

    def release_envs(self) -> None:
        """Close the collector's and the evaluator's envs (and their Ray actors)."""
        self.collector.close()
        self.evaluation.close()

    def _summary(self, outcome: str) -> dict[str, Any]:
        wall = self.clock.wall_time()
        return dict(
            env_step=self.env_step, train_iter=self.learner.train_iter, wall_time=wall,
            env_steps_per_s=self.env_step / wall if wall else 0.0,
            updates_per_s=self.learner.train_iter / wall if wall else 0.0,
            best_return=self.evaluation.best_return, last_return=self.evaluation.last_return, outcome=outcome,
            max_env_step=self.max_env_step, max_train_iter=self.max_train_iter)


def run_header(cfg: EasyDict, device: torch.device, world_size: int = 1) -> str:
    """Where a run computes and collects, in words: the device (and what 'auto' chose), the learner processes,
    the collector (local, or Ray with its workers and mode) and the env manager, or the dataset of an offline run."""
    requested = cfg.policy.get('device', 'cpu')
    words = [f"device {device}{' (auto)' if requested == 'auto' else ''}"]
    if world_size > 1:
        words.append(f'{world_size} learner processes')
    if feed_class(policy_class(cfg.policy.type, cfg.policy)).spec(cfg).offline:
        return ', '.join([*words, f"learning offline from '{cfg.policy.collect.data_path}', no collector"])
    envs = f'{cfg.env.collector_env_num} envs'
    if cfg.collector.type == 'ray':
        words.append(f'collector on Ray, {cfg.collector.num_workers} workers, {cfg.collector.mode}, {envs} in all')
    else:
        words.append(f"collector local, {envs} ({cfg.env_manager.type} env manager)")
    return ', '.join(words)
