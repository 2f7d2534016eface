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

import math
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn, Optional

import torch
from easydict import EasyDict
from tqdm import tqdm

from tidal.base.device import policy_device
from tidal.base.errors import TidalError
from tidal.base.feed import FeedClass
from tidal.entry.setup import check_budget
from tidal.envs.video import resolve_video_format
from tidal.policies.base import Policy
from tidal.worker.builders import EVALUATOR_SEED_OFFSET, build_env_manager, build_policy, configure_torch, set_seed
from tidal.worker.collectors import build_collector
from tidal.worker.checkpoint import save_checkpoint
from tidal.worker.distributed import Lockstep, NullLogger, init_distributed, shutdown_distributed
from tidal.worker.evaluator import EvalResult, Evaluator
from tidal.worker.finite import NonFiniteError
from tidal.worker.learner import Learner, Period, scalars
from tidal.worker.logger import RunLogger
from tidal.worker.plot import plot_curves
from tidal.worker.rng import rng_state, set_rng_state, stream_seed
from tidal.worker.tracking import backends, check_backends, open_trackers
from tidal.worker.update_recorder import UpdateRecorder

if TYPE_CHECKING:
    from tidal.worker.ray_evaluator import RemoteEvaluation


PLOT_SECS = 30.0
LATEST = 'latest.pt'  # the checkpoint `tidal resume` continues from  # redraw curve.png at most this often (matplotlib is slow); the run's end always draws it


class RunInterrupted(TidalError):
    """SIGTERM or SIGINT stopped the run after it saved a checkpoint."""

    def __init__(self, message: str, signum: int) -> None:
        super().__init__(message)
        self.signum = signum


def remote_evaluation(cfg: EasyDict, seed: int) -> RemoteEvaluation:
    """The eval actor of `policy.eval.evaluator.on_ray` (Ray is an optional extra: imported only then)."""
    from tidal.worker.ray_evaluator import RemoteEvaluation
    return RemoteEvaluation(cfg, seed)


class RunFolderError(TidalError):
    """The run folder cannot be written (disk full, read-only, permissions)."""


class Run:
    """One training run: its parts, counters and run folder. `train()` runs it to the end."""

    def __init__(self, cfg: EasyDict, run_dir: Path, feed_cls: FeedClass,
                 max_env_step: Optional[int] = None, max_train_iter: Optional[int] = None,
                 progress: bool = True, resume_state: Optional[dict[str, Any]] = None,
                 on_eval: Optional[Callable[[dict[str, float]], None]] = None, record_updates: bool = False) -> None:
        """`on_eval` sees each evaluation's row of evals.csv (a tuner prunes a trial by raising from it).
        `record_updates`: the feed's updates are written down (`self.recorder`) for a seed group to make."""
        check_budget(cfg, max_env_step, max_train_iter, feed_cls)
        self.cfg, self.run_dir = cfg, Path(run_dir)
        self.max_env_step, self.max_train_iter, self.progress = max_env_step, max_train_iter, progress
        self.on_eval = on_eval
        configure_torch(cfg)
        self.dist = init_distributed(policy_device(cfg.policy))
        if self.dist.is_main:
            check_backends(cfg)  # a missing package or tracking server, before anything is built
        self.lockstep = Lockstep(self.dist)
        rank_cfg = self.lockstep.rank_config(cfg)
        self.seed = rank_cfg.seed  # this rank's: its global generators, collector envs and buffers
        set_seed(self.seed)
        self.policy = build_policy(rank_cfg)
        self.collector = build_collector(rank_cfg, self.policy)
        evaluator_cfg, learner_cfg = cfg.policy.eval.evaluator, cfg.policy.learn.learner
        self.video_every = evaluator_cfg.video_every
        self.evals_done = 0  # evaluations so far (a resumed run keeps counting): which ones record a video
        recording = self.video_every > 0 and self.dist.is_main
        # rank 0 evaluates, here or on a Ray actor of its own (policy.eval.evaluator.on_ray)
        self.remote_eval = (remote_evaluation(cfg, cfg.seed + EVALUATOR_SEED_OFFSET)
                            if evaluator_cfg.on_ray and self.dist.is_main else None)
        self._stop_reached = False  # an evaluation on the actor reached the stop value
        self.evaluator = Evaluator(None if self.remote_eval else build_env_manager(cfg, 'evaluator', render=recording),
                                   self.policy.eval_mode, self.policy.device,
                                   n_episode=cfg.env.n_evaluator_episode, eval_freq=evaluator_cfg.eval_freq,
                                   eval_freq_env_steps=evaluator_cfg.eval_freq_env_steps,
                                   stop_value=cfg.env.stop_value, seed=cfg.seed + EVALUATOR_SEED_OFFSET)
        self.learner = Learner(self.policy.learn_mode, self.policy.device)
        self.recorder = UpdateRecorder(self.learner) if record_updates else None
        self.feed = feed_cls(rank_cfg, self.policy.views(), self.collector, self.recorder or self.learner)
        log_state = resume_state['log'] if resume_state else None
        self.logger: RunLogger | NullLogger = (
            RunLogger(self.run_dir, log_state, open_trackers(cfg, self.run_dir, log_state),
                      tensorboard='tensorboard' in backends(cfg)) if self.dist.is_main else NullLogger())
        self.collector.notify = self._notify  # e.g. a Ray collector's restarted workers, in the run's log
        self._video_suffix = self._video_format() if self.video_every and self.dist.is_main else ''
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        # returns of the training episodes the collector finished that the train log (collect_return) and the
        # next eval row (collect_return_mean) have not yet reported
        self._returns_to_log: list[float] = []
        self._returns_to_eval: list[float] = []
        self.elapsed = 0.0  # training seconds before this process (a resumed run keeps counting)
        self.saved_iter: Optional[int] = None  # train iteration of the latest checkpoint
        self._save_due = True  # a fresh run checkpoints at its start
        self._save_secs = learner_cfg.save_ckpt_secs
        self._last_plot = -float('inf')
        self.plot_secs = PLOT_SECS  # a seed group draws its aggregate instead, and each seed's curve at its end
        self.latest_name = LATEST  # a seed group stages its seeds' checkpoints under another name, then commits them
        self._periods = {  # of the learner's hooks
            'log': Period(learner_cfg.log_freq, learner_cfg.log_freq_env_steps, lambda: self.env_step),
            'save': Period(learner_cfg.save_ckpt_freq, learner_cfg.save_ckpt_freq_env_steps, lambda: self.env_step)}
        self.learner.register_hook(self._log_train, self._periods['log'])
        self.learner.register_hook(lambda learner, info: self.request_checkpoint(), self._periods['save'])
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
        return {
            'policy': self.policy.learn_mode.state_dict(), **own, 'train_iter': self.learner.train_iter,
            'last_eval_iter': self.evaluator.last_eval_iter, 'last_eval_env_step': self.evaluator.last_eval_env_step,
            'evals_done': self.evals_done,
            'hook_env_steps': {name: period.last_env_step for name, period in self._periods.items()},
            'best_return': self.best_return, 'last_return': self.last_return,
            'collect_returns': {'log': list(self._returns_to_log), 'eval': list(self._returns_to_eval)},
            'max_env_step': self.max_env_step, 'max_train_iter': self.max_train_iter,
            'wall_time': self._wall_time(), 'log': self.logger.position(self.env_step),
            'finished': finished, 'world_size': self.dist.world_size, 'ranks': self.lockstep.gather(lambda: own),
        }

    def _save_latest(self, finished: Optional[str] = None) -> None:
        self.check_finite()  # never replace the last good checkpoint by a diverged one
        self._take_remote_eval(wait=True)  # the checkpoint holds every evaluation submitted before it
        state = self._latest_state(finished)
        if self.dist.is_main:
            save_checkpoint(state, self.run_dir / 'ckpt' / self.latest_name)
        self.saved_iter = self.learner.train_iter
        self._save_due, self._last_save = False, time.monotonic()

    def _save_best(self, policy_state: dict[str, Any], env_step: int, train_iter: int) -> None:
        """Only what evaluation and deployment need, of the weights evaluated."""
        save_checkpoint({'policy': policy_state, 'env_step': env_step, 'train_iter': train_iter,
                         'best_return': self.best_return}, self.run_dir / 'ckpt' / 'best.pt')

    def _restore(self, state: dict[str, Any]) -> None:
        own = self.lockstep.own_state(state)  # this rank's collector, feed and generators
        self.policy.learn_mode.load_state_dict(state['policy'])
        self.feed.load_state_dict(own['feed'])
        self.learner.restart_guard_at(state['train_iter'])
        self.evaluator.mark_evaluated(state['last_eval_iter'], state.get('last_eval_env_step', 0))
        self.evals_done = state.get('evals_done', 0)
        for name, last_env_step in state.get('hook_env_steps', {}).items():
            self._periods[name].last_env_step = last_env_step
        self.best_return, self.last_return = state['best_return'], state['last_return']
        pending = state.get('collect_returns', {})  # absent from checkpoints written before evals.csv had them
        self._returns_to_log, self._returns_to_eval = list(pending.get('log', [])), list(pending.get('eval', []))
        self.elapsed = state['wall_time']
        self.saved_iter = state['train_iter']
        self._save_due = False
        restarted = self.collector.load_state_dict(own['collector'],
                                                   fallback_seed=stream_seed(self.seed, own['collector']['env_step']))
        set_rng_state(own['rng'])
        resumed = f'resumed at env step {self.env_step}, train iteration {state["train_iter"]}'
        self.logger.info(resumed)
        if self.dist.is_main:
            print(f'tidal: {self.run_dir}: {resumed}', flush=True)
        if restarted:
            rank = f' of rank {self.dist.rank}' if self.dist.enabled else ''
            message = f'resume: the collector envs{rank} restart their episodes ({restarted})'
            self.logger.info(message)
            print(f'tidal: {message}', flush=True)

    def request_checkpoint(self) -> None:
        """Save at the next top of the loop, where the run's state is consistent (the learner's save period asks,
        and a seed group asks all its seeds when one is due)."""
        self._save_due = True

    def checkpoint_due(self) -> bool:
        return self._save_due or (self._save_secs is not None
                                  and time.monotonic() - self._last_save >= self._save_secs)

    # ----- the loop --------------------------------------------------------------------------
    def train(self) -> Policy:
        self.begin()
        restore_signals = self.lockstep.catch_signals()
        outcome = 'stopped by an error'
        try:
            outcome = self._loop()
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
        self._start = self._last_save = time.monotonic()
        header = run_header(self.cfg, self.policy.device, self.dist.world_size)
        self.logger.info(f'training {self.cfg.policy.type} on {self.cfg.env.env_id} in {self.run_dir} '
                         f'(seed {self.cfg.seed}); {header}')
        if self.dist.is_main and self.recorder is None:  # a seed group says it once for its seeds
            print(f'tidal: training {self.cfg.policy.type} on {self.cfg.env.env_id} (seed {self.cfg.seed}) in '
                  f'{self.run_dir}: {header}', flush=True)
        self._bar = tqdm(total=self.max_env_step, initial=self.env_step, unit='step', dynamic_ncols=True,
                         disable=not (self.progress and self.dist.is_main), mininterval=1.0)

    def _loop(self) -> str:
        """Run until done; returns why the run ended."""
        while True:
            ended = self.top_of_loop()
            if ended is not None:
                return ended
            self.feed_step()

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
        self._save_due |= warm != self.feed.warmed_up()  # checkpoint right after the warm-up
        self._bar.update(self.env_step - self._bar.n)

    def env_budget(self) -> Optional[int]:
        """Env steps left of this rank's budget (None: no env-step budget)."""
        return self.lockstep.env_budget(self.max_env_step, self.env_step)

    def fail_step(self, err: Exception) -> NoReturn:
        """Raise the error that `err`, raised by a feed step (or by a seed group's collection for this seed), stands
        for: a NaN action, env value or sampling error usually follows a NaN update, which is named first; a
        non-finite action names the last good checkpoint; any other error is raised as it is."""
        self.check_finite()
        if isinstance(err, NonFiniteError):
            raise NonFiniteError(f'{err}; {self._last_good()}') from err
        raise err

    def concluding_eval_due(self) -> bool:
        """Whether `conclude` evaluates: the last update was not evaluated."""
        return self.evaluator.last_eval_iter != self.learner.train_iter

    def conclude(self, outcome: str) -> None:
        """The run's last evaluation (unless its last update was evaluated) and final checkpoint."""
        if self.concluding_eval_due():
            self._evaluate()
        self._save_latest(finished=outcome)  # after the last evaluation's row (one on the actor is waited for)

    def failed(self, err: BaseException) -> tuple[str, BaseException]:
        """Log the error that stopped the run; returns how the run ended and the error to raise (a run folder
        that cannot be written becomes one RunFolderError line)."""
        self._log_failure(err)
        if isinstance(err, OSError):
            err = RunFolderError(f"cannot write to the run folder '{self.run_dir}': {err.strerror or err}"
                                 + (f" ('{err.filename}')" if err.filename else ''))
        outcome = f'stopped: {err}' if isinstance(err, TidalError) else f'stopped by {type(err).__name__}'
        return outcome, err

    def close(self, outcome: str) -> None:
        self._bar.close()
        self._close(outcome)
        shutdown_distributed()

    def eval_due(self) -> bool:
        """Whether the top of the loop evaluates here (always after the warm-up, when the schedule says so)."""
        return self.feed.warmed_up() and self.evaluator.should_eval(self.learner.train_iter, self.env_step)

    @property
    def env_step(self) -> int:
        """Env steps of the whole run: the sum over the ranks, which collect in lockstep."""
        return self.collector.env_step * self.dist.world_size

    def _budget_spent(self) -> Optional[str]:
        """Which budget is spent, if one is."""
        if self.max_env_step is not None and self.env_step >= self.max_env_step:
            return f'budget of {self.max_env_step} env steps reached'
        if self.max_train_iter is not None and self.learner.train_iter >= self.max_train_iter:
            return f'budget of {self.max_train_iter} train iterations reached'
        return None

    def _evaluate_if_due(self) -> bool:
        """Take an evaluation the actor finished, evaluate when due; True once the stop value is reached."""
        self._take_remote_eval(wait=False)
        return self._stop_reached or (self.eval_due() and self._evaluate())

    def _evaluate(self) -> bool:
        """Evaluate (rank 0 only), here or on the eval actor; True when the stop value is reached."""
        self._take_collect_returns()
        collected, self._returns_to_eval = self._returns_to_eval, []
        train_iter, env_step = self.learner.train_iter, self.env_step
        if not self.dist.is_main:
            self.evaluator.mark_evaluated(train_iter, env_step)
            return False
        self.check_finite()
        if self.remote_eval is not None:
            self._take_remote_eval(wait=True)  # one in flight at a time
            self.evaluator.mark_evaluated(train_iter, env_step)
            self.remote_eval.submit(self.policy.weights(), train_iter, env_step, self._wall_time(), collected,
                                    self.policy.learn_mode.state_dict())
            return self._stop_reached
        result = self.evaluator.eval(train_iter, env_step, self.videos_due())
        self._record_eval(result, train_iter, env_step, self._wall_time(), collected)
        return self._stop_reached

    def _take_remote_eval(self, wait: bool) -> None:
        """Record the eval actor's evaluation once it is done (waiting for it with `wait`)."""
        done = self.remote_eval.take(wait) if self.remote_eval is not None else None
        if done is not None:
            submitted, result = done
            self._record_eval(result, submitted.train_iter, submitted.env_step, submitted.wall_time,
                              submitted.collected, submitted.policy_state)

    def _record_eval(self, result: EvalResult, train_iter: int, env_step: int, wall_time: float,
                     collected: list[float], policy_state: Optional[dict[str, Any]] = None) -> None:
        """Log an evaluation's row, plot, keep the best checkpoint (`policy_state`: what was evaluated, default
        the current state), and note when it reached the stop value."""
        self.evals_done += 1
        self.last_return = result.return_mean
        collect_return = sum(collected) / len(collected) if collected else float('nan')
        row = result.row(env_step, train_iter, wall_time, collect_return)
        self.logger.evaluation(row)
        if result.return_mean > self.best_return:
            self.best_return = result.return_mean
            self._save_best(policy_state or self.policy.learn_mode.state_dict(), env_step, train_iter)
        if math.isfinite(self.plot_secs) and time.monotonic() - self._last_plot >= self.plot_secs:
            self._plot()
        progress = {'iter': train_iter, 'eval_return': f'{result.return_mean:.1f}'}
        if collected:
            progress['collect_return'] = f'{collect_return:.1f}'
        self._bar.set_postfix(progress, refresh=False)
        if self.on_eval is not None:
            self.on_eval(row)
        self._stop_reached |= self.evaluator.reached_stop_value(result)

    def videos_due(self) -> list[Path]:
        """The file for this evaluation's first episode every `video_every` evaluations, named by env step."""
        if not self.video_every or self.evals_done % self.video_every:
            return []
        return [self.run_dir / 'videos' / f'eval_env{self.env_step}.{self._video_suffix}']

    def _video_format(self) -> str:
        suffix, fallback = resolve_video_format(None)
        if fallback:
            self._notify(f'policy.eval.evaluator.video_every: {fallback}')
        return suffix

    def _plot(self) -> None:
        plot_curves([self.run_dir], self.run_dir / 'curve.png', title=f'{self.cfg.exp_name}')
        self._last_plot = time.monotonic()

    def _notify(self, message: str) -> None:
        """An event the user should see now (a restarted worker): in the log and on stderr."""
        self.logger.info(message)
        tqdm.write(f'tidal: {message}', file=sys.stderr)

    def _log_train(self, learner: Learner, info: dict[str, Any]) -> None:
        self.check_finite()
        values = scalars(info, learner.logged_names)
        values.update(self.collector.monitor())
        if self.remote_eval is not None:
            values['eval_wait_seconds'] = self.remote_eval.wait_seconds
        self._take_collect_returns()
        collected, self._returns_to_log = self._returns_to_log, []
        if collected:
            values['collect_return'] = sum(collected) / len(collected)
        self.logger.scalars('train', values, self.env_step, learner.train_iter)

    def _take_collect_returns(self) -> None:
        """Hand the returns of the training episodes the collector finished since the last call to both of
        their readers: the train log and the next eval row (collector.episodes has room for one)."""
        returns = self.collector.episodes.pop().returns
        self._returns_to_log.extend(returns)
        self._returns_to_eval.extend(returns)

    # ----- finite or stop --------------------------------------------------------------------
    def check_finite(self) -> None:
        """Stop at the first NaN or inf in a monitored value or a parameter, naming it."""
        self.learner.check_finite(self.policy.model, self.env_step, self._last_good())

    def _last_good(self) -> str:
        if self.saved_iter is None:
            return 'no checkpoint was written before it'
        return f"the last good checkpoint is {self.run_dir / 'ckpt' / 'latest.pt'} (train iteration {self.saved_iter})"

    # ----- endings --------------------------------------------------------------------------
    def _log_failure(self, err: BaseException) -> None:
        try:
            self.logger.exception(f'run stopped: {type(err).__name__}: {err}', err)
        except (OSError, ValueError):  # the log itself cannot be written: the caller still sees the error
            pass

    def _close(self, outcome: str) -> None:
        """Write the summary, release the envs and say in one line how the run ended (rank 0)."""
        final_plot = self._plot if (self.run_dir / 'evals.csv').is_file() else (lambda: None)
        # the final curve before the logger closes: the tracking services get it then
        finishes = (lambda: self._write_summary(outcome), lambda: self.logger.info(f'run ended: {outcome}'),
                    final_plot, self.logger.close)
        for finish in finishes if self.dist.is_main else ():
            try:
                finish()
            except (OSError, ValueError):  # a full or read-only folder: the run's error already says so
                pass
        self.release_envs()
        if not self.dist.is_main:
            return
        last = 'none' if self.last_return is None else f'{self.last_return:.2f}'
        best = 'none' if self.best_return == -float('inf') else f'{self.best_return:.2f}'
        print(f'tidal: run ended ({outcome}) at env step {self.env_step}; eval return best {best}, last {last}; '
              f"run folder {self.run_dir} ({self.run_dir / 'curve.png'}, {self.run_dir / 'ckpt' / 'best.pt'})",
              flush=True)

    def release_envs(self) -> None:
        """Close the collector's and the evaluator's envs (and their Ray actors)."""
        self.collector.close()
        if self.evaluator.env is not None:
            self.evaluator.env.close()
        if self.remote_eval is not None:
            self.remote_eval.close()

    def _wall_time(self) -> float:
        return self.elapsed + time.monotonic() - self._start

    def _write_summary(self, outcome: str) -> None:
        wall = self._wall_time()
        self.logger.summary(dict(
            env_step=self.env_step, train_iter=self.learner.train_iter, wall_time=wall,
            env_steps_per_s=self.env_step / wall if wall else 0.0,
            updates_per_s=self.learner.train_iter / wall if wall else 0.0,
            best_return=self.best_return, last_return=self.last_return, outcome=outcome,
            max_env_step=self.max_env_step, max_train_iter=self.max_train_iter))


def run_header(cfg: EasyDict, device: torch.device, world_size: int = 1) -> str:
    """Where a run computes and collects, in words: the device (and what 'auto' chose), the learner processes,
    the collector (local, or Ray with its workers and mode) and the env manager."""
    requested = cfg.policy.get('device', 'cpu')
    words = [f"device {device}{' (auto)' if requested == 'auto' else ''}"]
    if world_size > 1:
        words.append(f'{world_size} learner processes')
    envs = f'{cfg.env.collector_env_num} envs'
    if cfg.collector.type == 'ray':
        words.append(f'collector on Ray, {cfg.collector.num_workers} workers, {cfg.collector.mode}, {envs} in all')
    else:
        words.append(f"collector local, {envs} ({cfg.env_manager.type} env manager)")
    return ', '.join(words)
