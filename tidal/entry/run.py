"""The run shell every training loop shares: run folder, evaluation, logs, checkpoints, resume.

What differs between algorithm families is only where their training data comes from, and that is
a `DataFeed` (replay for off-policy learning, half demonstrations for SQIL, ...). The shell drives a
feed one `step` at a time and does everything else at the top of its loop, the one point where the
whole run's state is consistent: evaluate when due, checkpoint when due (after the warm-up, every
`save_ckpt_freq` iterations or `save_ckpt_secs` seconds, on SIGTERM / SIGINT), stop when done.

Every log event after a checkpoint comes after at least one more collection, so it is stepped by a
later env step than any event before it: that is what lets a resumed run drop exactly what the
killed process wrote after its checkpoint.
"""
from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Protocol

from easydict import EasyDict
from tqdm import tqdm

from tidal.entry.setup import (EVALUATOR_SEED_OFFSET, build_env_managers, build_policy, check_budget,
                               configure_torch, set_seed)
from tidal.errors import TidalError
from tidal.policies.base import Policy
from tidal.worker.checkpoint import save_checkpoint
from tidal.worker.collector import SampleCollector
from tidal.worker.evaluator import Evaluator
from tidal.worker.finite import NonFiniteError, first_non_finite_parameter
from tidal.worker.learner import Learner, scalars
from tidal.worker.logger import RunLogger
from tidal.worker.plot import plot_curves
from tidal.worker.rng import rng_state, set_rng_state, stream_seed


PLOT_SECS = 30.0  # redraw curve.png at most this often (matplotlib is slow); the run's end always draws it


class DataFeed(Protocol):
    """The data path of an algorithm family: collection, buffers and the updates they feed."""

    def warmed_up(self) -> bool: ...  # evaluation and the first checkpoint wait for the warm-up
    def step(self, env_budget: Optional[int]) -> None: ...  # collect (at most env_budget steps of warm-up), learn
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


FeedFactory = Callable[[EasyDict, Policy, SampleCollector, Learner], DataFeed]


class RunInterrupted(TidalError):
    """SIGTERM or SIGINT stopped the run after it saved a checkpoint."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


class RunFolderError(TidalError):
    """The run folder cannot be written (disk full, read-only, permissions)."""


class Run:
    """One training run: its parts, counters and run folder. `train()` runs it to the end."""

    def __init__(self, cfg: EasyDict, run_dir: Path, feed_factory: FeedFactory,
                 max_env_step: Optional[int] = None, max_train_iter: Optional[int] = None,
                 progress: bool = True, resume_state: Optional[dict[str, Any]] = None) -> None:
        check_budget(cfg, max_env_step, max_train_iter)
        self.cfg, self.run_dir = cfg, Path(run_dir)
        self.max_env_step, self.max_train_iter, self.progress = max_env_step, max_train_iter, progress
        configure_torch(cfg)
        set_seed(cfg.seed)
        self.policy = build_policy(cfg)
        collector_env, evaluator_env = build_env_managers(cfg)
        self.collector = SampleCollector(collector_env, self.policy.collect_mode, self.policy.device)
        self.evaluator = Evaluator(evaluator_env, self.policy.eval_mode, self.policy.device,
                                   n_episode=cfg.env.n_evaluator_episode,
                                   eval_freq=cfg.policy.eval.evaluator.eval_freq,
                                   stop_value=cfg.env.stop_value, seed=cfg.seed + EVALUATOR_SEED_OFFSET)
        self.learner = Learner(self.policy.learn_mode, self.policy.device)
        self.feed = feed_factory(cfg, self.policy, self.collector, self.learner)
        self.logger = RunLogger(self.run_dir, resume_from=resume_state['log'] if resume_state else None)
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.elapsed = 0.0  # training seconds before this process (a resumed run keeps counting)
        self.saved_iter: Optional[int] = None  # train iteration of the latest checkpoint
        learner_cfg = cfg.policy.learn.learner
        self._save_due = True  # a fresh run checkpoints at its start
        self._save_secs = learner_cfg.save_ckpt_secs
        self._signal: Optional[int] = None
        self._last_plot = -float('inf')
        self.learner.register_hook(self._log_train, learner_cfg.log_freq)
        self.learner.register_hook(self._request_save, learner_cfg.save_ckpt_freq)
        if resume_state is None:
            self.collector.reset(seed=stream_seed(cfg.seed))
        else:
            self._restore(resume_state)

    # ----- checkpoints -----------------------------------------------------------------------
    def _latest_state(self, finished: Optional[str]) -> dict[str, Any]:
        """Everything an exact resume needs, taken at the top of the loop."""
        return {
            'policy': self.policy.learn_mode.state_dict(), 'collector': self.collector.state_dict(),
            'feed': self.feed.state_dict(), 'train_iter': self.learner.train_iter,
            'last_eval_iter': self.evaluator.last_eval_iter,
            'best_return': self.best_return, 'last_return': self.last_return, 'rng': rng_state(),
            'max_env_step': self.max_env_step, 'max_train_iter': self.max_train_iter,
            'wall_time': self._wall_time(), 'log': self.logger.position(self.collector.env_step),
            'finished': finished,
        }

    def _save_latest(self, finished: Optional[str] = None) -> None:
        self._check_finite()  # never replace the last good checkpoint by a diverged one
        save_checkpoint(self._latest_state(finished), self.run_dir / 'ckpt' / 'latest.pt')
        self.saved_iter = self.learner.train_iter
        self._save_due, self._last_save = False, time.monotonic()

    def _save_best(self) -> None:
        """Only what evaluation and deployment need."""
        save_checkpoint({'policy': self.policy.learn_mode.state_dict(), 'env_step': self.collector.env_step,
                         'train_iter': self.learner.train_iter, 'best_return': self.best_return},
                        self.run_dir / 'ckpt' / 'best.pt')

    def _restore(self, state: dict[str, Any]) -> None:
        self.policy.learn_mode.load_state_dict(state['policy'])
        self.feed.load_state_dict(state['feed'])
        self.learner.restart_guard_at(state['train_iter'])
        self.evaluator.last_eval_iter = state['last_eval_iter']
        self.best_return, self.last_return = state['best_return'], state['last_return']
        self.elapsed = state['wall_time']
        self.saved_iter = state['train_iter']
        self._save_due = False
        env_step = state['collector']['env_step']
        restarted = self.collector.load_state_dict(state['collector'], fallback_seed=stream_seed(self.cfg.seed, env_step))
        set_rng_state(state['rng'])
        self.logger.info(f'resumed at env step {env_step}, train iteration {state["train_iter"]}')
        if restarted:
            message = f'resume: the collector envs restart their episodes ({restarted})'
            self.logger.info(message)
            print(f'tidal: {message}', flush=True)

    def _request_save(self, learner: Learner, info: dict[str, Any]) -> None:
        self._save_due = True  # saved at the top of the loop, where the run's state is consistent

    def _checkpoint_due(self) -> bool:
        return self._save_due or (self._save_secs is not None
                                  and time.monotonic() - self._last_save >= self._save_secs)

    # ----- the loop --------------------------------------------------------------------------
    def train(self) -> Policy:
        self._start = self._last_save = time.monotonic()
        self.logger.info(f'training {self.cfg.policy.type} on {self.cfg.env.env_id} in {self.run_dir} '
                         f'(seed {self.cfg.seed}, device {self.policy.device})')
        bar = tqdm(total=self.max_env_step, initial=self.collector.env_step, unit='step', dynamic_ncols=True,
                   disable=not self.progress, mininterval=1.0)
        handlers = self._catch_signals()
        outcome = 'stopped by an error'
        try:
            outcome = self._loop(bar)
            if self.evaluator.last_eval_iter != self.learner.train_iter:
                self._evaluate(bar)
            self._save_latest(finished=outcome)
        except BaseException as err:
            self._log_failure(err)
            if isinstance(err, OSError):
                err = RunFolderError(f"cannot write to the run folder '{self.run_dir}': {err.strerror or err}"
                                     + (f" ('{err.filename}')" if err.filename else ''))
            outcome = f'stopped: {err}' if isinstance(err, TidalError) else f'stopped by {type(err).__name__}'
            if isinstance(err, RunFolderError):
                raise err from None
            raise
        finally:
            signal_restore(handlers)
            bar.close()
            self._close(outcome)
        return self.policy

    def _loop(self, bar: tqdm) -> str:
        """Run until done; returns why the run ended."""
        while True:
            if self._signal is not None:
                self._save_latest()
                name = signal.Signals(self._signal).name
                raise RunInterrupted(f'{name} at env step {self.collector.env_step}: checkpoint saved; continue '
                                     f'with: tidal resume {self.run_dir}', self._signal)
            if self.feed.warmed_up() and self.evaluator.should_eval(self.learner.train_iter) \
                    and self._evaluate(bar):
                return f'stop value {self.evaluator.stop_value} reached'
            if self._checkpoint_due():
                self._save_latest()
            if self._budget_spent():
                return self._budget_reason()
            warm = self.feed.warmed_up()
            try:
                self.feed.step(self._env_budget())
            except Exception as err:
                # a NaN action, env value or sampling error usually follows a NaN update: name that first
                self._check_finite()
                if isinstance(err, NonFiniteError):
                    raise NonFiniteError(f'{err}; {self._last_good()}') from err
                raise
            self._save_due |= warm != self.feed.warmed_up()  # checkpoint right after the warm-up
            bar.update(self.collector.env_step - bar.n)

    def _env_budget(self) -> Optional[int]:
        return None if self.max_env_step is None else self.max_env_step - self.collector.env_step

    def _budget_spent(self) -> bool:
        return ((self.max_env_step is not None and self.collector.env_step >= self.max_env_step)
                or (self.max_train_iter is not None and self.learner.train_iter >= self.max_train_iter))

    def _budget_reason(self) -> str:
        if self.max_env_step is not None and self.collector.env_step >= self.max_env_step:
            return f'budget of {self.max_env_step} env steps reached'
        return f'budget of {self.max_train_iter} train iterations reached'

    def _evaluate(self, bar: tqdm) -> bool:
        """Evaluate, log, plot, keep the best checkpoint; True when the stop value is reached."""
        self._check_finite()
        result = self.evaluator.eval(self.learner.train_iter)
        self.last_return = result.return_mean
        self.logger.evaluation(dict(
            env_step=self.collector.env_step, train_iter=self.learner.train_iter, wall_time=self._wall_time(),
            return_mean=result.return_mean, return_std=result.return_std,
            episode_length_mean=result.length_mean))
        if result.return_mean > self.best_return:
            self.best_return = result.return_mean
            self._save_best()
        if time.monotonic() - self._last_plot >= PLOT_SECS:
            self._plot()
        bar.set_postfix(iter=self.learner.train_iter, eval_return=f'{result.return_mean:.1f}', refresh=False)
        return self.evaluator.reached_stop_value(result)

    def _plot(self) -> None:
        plot_curves([self.run_dir], self.run_dir / 'curve.png', title=f'{self.cfg.exp_name}')
        self._last_plot = time.monotonic()

    def _log_train(self, learner: Learner, info: dict[str, Any]) -> None:
        self._check_finite()
        values = scalars(info, self.policy.learn_mode.monitor_vars())
        collected = self.collector.episodes.pop()
        if collected.returns:
            values['collect_return'] = sum(collected.returns) / len(collected.returns)
        self.logger.scalars('train', values, self.collector.env_step, learner.train_iter)

    # ----- finite or stop --------------------------------------------------------------------
    def _check_finite(self) -> None:
        """Stop at the first NaN or inf in a monitored value or a parameter, naming it."""
        failure = self.learner.first_failure()
        if failure is not None:
            key, value, iteration = failure
            raise NonFiniteError(f'{key} became {value} at train iteration {iteration} (env step '
                                 f'{self.collector.env_step} when seen); {self._last_good()}')
        name = first_non_finite_parameter(self.policy.model.named_parameters())
        if name is not None:
            raise NonFiniteError(f'parameter {name} is not finite by train iteration {self.learner.train_iter}; '
                                 f'{self._last_good()}')

    def _last_good(self) -> str:
        if self.saved_iter is None:
            return 'no checkpoint was written before it'
        return f"the last good checkpoint is {self.run_dir / 'ckpt' / 'latest.pt'} (train iteration {self.saved_iter})"

    # ----- signals, endings ------------------------------------------------------------------
    def _catch_signals(self) -> dict[int, Any]:
        """SIGTERM (preemption) and SIGINT make the loop checkpoint and stop; a second SIGINT stops now."""
        if threading.current_thread() is not threading.main_thread():
            return {}

        def handle(signum: int, frame: Any) -> None:
            if self._signal is not None and signum == signal.SIGINT:
                raise KeyboardInterrupt
            self._signal = signum
        return {signum: signal.signal(signum, handle) for signum in (signal.SIGTERM, signal.SIGINT)}

    def _log_failure(self, err: BaseException) -> None:
        try:
            self.logger.exception(f'run stopped: {type(err).__name__}: {err}', err)
        except (OSError, ValueError):  # the log itself cannot be written: the caller still sees the error
            pass

    def _close(self, outcome: str) -> None:
        """Write the summary, release the envs and say in one line how the run ended."""
        final_plot = self._plot if (self.run_dir / 'evals.csv').is_file() else (lambda: None)
        for finish in (lambda: self._write_summary(outcome), lambda: self.logger.info(f'run ended: {outcome}'),
                       self.logger.close, final_plot):
            try:
                finish()
            except (OSError, ValueError):  # a full or read-only folder: the run's error already says so
                pass
        self.collector.env.close()
        self.evaluator.env.close()
        last = 'none' if self.last_return is None else f'{self.last_return:.2f}'
        best = 'none' if self.best_return == -float('inf') else f'{self.best_return:.2f}'
        print(f'tidal: run ended ({outcome}) at env step {self.collector.env_step}; eval return best {best}, last {last}; '
              f"run folder {self.run_dir} ({self.run_dir / 'curve.png'}, {self.run_dir / 'ckpt' / 'best.pt'})",
              flush=True)

    def _wall_time(self) -> float:
        return self.elapsed + time.monotonic() - self._start

    def _write_summary(self, outcome: str) -> None:
        wall = self._wall_time()
        self.logger.summary(dict(
            env_step=self.collector.env_step, train_iter=self.learner.train_iter, wall_time=wall,
            env_steps_per_s=self.collector.env_step / wall if wall else 0.0,
            updates_per_s=self.learner.train_iter / wall if wall else 0.0,
            best_return=self.best_return, last_return=self.last_return, outcome=outcome,
            max_env_step=self.max_env_step, max_train_iter=self.max_train_iter))


def signal_restore(handlers: dict[int, Any]) -> None:
    for signum, handler in handlers.items():
        signal.signal(signum, handler)
