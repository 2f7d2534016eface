"""The off-policy training loop: collect -> replay buffer -> learn, with evaluation on schedule."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Iterable, Optional

import torch
from easydict import EasyDict
from tqdm import tqdm

from tidal.entry.setup import (EVALUATOR_SEED_OFFSET, ConfigInput, build_env_managers, build_policy,
                               build_replay_buffer, check_budget, configure_torch, load_config, rng_state,
                               set_rng_state, set_seed, start_run)
from tidal.policies.base import Policy
from tidal.worker.checkpoint import save_checkpoint
from tidal.worker.collector import SampleCollector
from tidal.worker.evaluator import EvalResult, Evaluator
from tidal.worker.learner import Learner, scalars
from tidal.worker.logger import RunLogger
from tidal.worker.plot import plot_curves


class OffPolicyRun:
    """One training run: its parts, counters and run folder. `train()` runs it to the end."""

    def __init__(self, cfg: EasyDict, run_dir: Path, max_env_step: Optional[int] = None,
                 max_train_iter: Optional[int] = None, progress: bool = True) -> None:
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
        self.buffer = build_replay_buffer(cfg, self.policy.device, cfg.seed)
        self.learner = Learner(self.policy.learn_mode)
        self.logger = RunLogger(self.run_dir)
        self.best_return = -float('inf')
        self.last_return: Optional[float] = None
        self.elapsed = 0.0  # training seconds before this process (a resumed run keeps counting)
        learner_cfg = cfg.policy.learn.learner
        self.learner.register_hook(self._log_train, learner_cfg.log_freq)
        self.learner.register_hook(lambda learner, info: self.save('latest'), learner_cfg.save_ckpt_freq)

    # ----- checkpoints -----------------------------------------------------------------------
    def save(self, name: str) -> Path:
        """`latest` holds everything a resume needs; `best` only what evaluation and deployment need."""
        state: dict[str, Any] = {
            'policy': self.policy.learn_mode.state_dict(),
            'env_step': self.collector.env_step, 'train_iter': self.learner.train_iter,
            'best_return': self.best_return, 'last_return': self.last_return,
        }
        if name == 'latest':
            state.update(replay_buffer=self.buffer.state_dict(), rng=rng_state(),
                         max_env_step=self.max_env_step, max_train_iter=self.max_train_iter,
                         wall_time=self._wall_time())
        return save_checkpoint(state, self.run_dir / 'ckpt' / f'{name}.pt')

    def restore(self, state: dict[str, Any]) -> None:
        self.policy.learn_mode.load_state_dict(state['policy'])
        self.buffer.load_state_dict(state['replay_buffer'])
        self.collector.env_step = state['env_step']
        self.learner.train_iter = state['train_iter']
        self.best_return, self.last_return = state['best_return'], state['last_return']
        self.elapsed = state['wall_time']
        set_rng_state(state['rng'])

    # ----- the loop --------------------------------------------------------------------------
    def train(self) -> Policy:
        cfg = self.cfg
        self._start = time.perf_counter()
        # a resumed run restarts its envs from fresh episodes, on seeds of its own
        self.collector.reset(seed=cfg.seed + self.collector.env_step)
        self.logger.info(f'training {cfg.policy.type} on {cfg.env.env_id} in {self.run_dir} '
                         f'(seed {cfg.seed}, device {self.policy.device})')
        bar = tqdm(total=self.max_env_step, initial=self.collector.env_step, unit='step', dynamic_ncols=True,
                   disable=not self.progress, mininterval=1.0)
        try:
            warmup = cfg.policy.random_collect_size - self.collector.env_step
            if warmup > 0:
                self.buffer.extend(self.collector.collect(warmup, random=True))
                bar.update(self.collector.env_step - bar.n)
            while not self._finished():
                if self.evaluator.should_eval(self.learner.train_iter) and self._evaluate(bar):
                    break
                self.buffer.extend(self.collector.collect(cfg.policy.collect.n_sample))
                for _ in range(cfg.policy.learn.update_per_collect):
                    self._update()
                bar.update(self.collector.env_step - bar.n)
            if self.evaluator.last_eval_iter != self.learner.train_iter:
                self._evaluate(bar)
            self.save('latest')
        finally:
            bar.close()
            self._write_summary()
            self.logger.close()
            self.collector.env.close()
            self.evaluator.env.close()
        return self.policy

    def _sample_batch(self) -> dict[str, Any]:
        """The training batch of one update; pipelines with other data sources override this."""
        batch_size, unroll_len = self.cfg.policy.learn.batch_size, self.cfg.policy.collect.unroll_len
        if unroll_len > 1:
            return self.buffer.sample_sequence(batch_size, unroll_len, stride=self.collector.env.num_envs)
        return self.buffer.sample(batch_size)

    def _update(self) -> None:
        batch = self._sample_batch()
        info = self.learner.train(batch)
        if self.cfg.policy.priority:
            self.buffer.update_priority(batch['index'], info['priority'])

    def _finished(self) -> bool:
        return ((self.max_env_step is not None and self.collector.env_step >= self.max_env_step)
                or (self.max_train_iter is not None and self.learner.train_iter >= self.max_train_iter))

    def _evaluate(self, bar: tqdm) -> bool:
        """Evaluate, log, plot, keep the best checkpoint; True when the stop value is reached."""
        result: EvalResult = self.evaluator.eval(self.learner.train_iter)
        self.last_return = result.return_mean
        self.logger.evaluation(dict(
            env_step=self.collector.env_step, train_iter=self.learner.train_iter, wall_time=self._wall_time(),
            return_mean=result.return_mean, return_std=result.return_std,
            episode_length_mean=result.length_mean))
        if result.return_mean > self.best_return:
            self.best_return = result.return_mean
            self.save('best')
        plot_curves([self.run_dir], self.run_dir / 'curve.png', title=f'{self.cfg.exp_name}')
        bar.set_postfix(iter=self.learner.train_iter, eval_return=f'{result.return_mean:.1f}', refresh=False)
        if self.evaluator.reached_stop_value(result):
            self.logger.info(f'stop value {self.evaluator.stop_value} reached: eval return {result.return_mean:.2f}')
            return True
        return False

    def _log_train(self, learner: Learner, info: dict[str, Any]) -> None:
        values = scalars(info, self.policy.learn_mode.monitor_vars())
        collected = self.collector.episodes.pop()
        if collected.returns:
            values['collect_return'] = sum(collected.returns) / len(collected.returns)
        self.logger.scalars('train', values, learner.train_iter)

    def _wall_time(self) -> float:
        return self.elapsed + time.perf_counter() - self._start

    def _write_summary(self) -> None:
        wall = self._wall_time()
        self.logger.summary(dict(
            env_step=self.collector.env_step, train_iter=self.learner.train_iter, wall_time=wall,
            env_steps_per_s=self.collector.env_step / wall if wall else 0.0,
            updates_per_s=self.learner.train_iter / wall if wall else 0.0,
            best_return=self.best_return, last_return=self.last_return))


def serial_pipeline(input_cfg: ConfigInput, seed: int = 0, max_env_step: Optional[int] = None,
                    max_train_iter: Optional[int] = None, overrides: Iterable[str] = (),
                    progress: bool = True) -> Policy:
    """Train an off-policy algorithm from a config path, zoo name or (main, create) pair."""
    return start_run(OffPolicyRun, load_config(input_cfg, seed, overrides), max_env_step, max_train_iter, progress)
