"""Evaluator: runs whole episodes with the policy's eval mode (its most likely actions unless
`policy.eval.deterministic` is False)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np
import torch

from tidal.envs.env_manager import EnvManager
from tidal.base.errors import TidalError
from tidal.base.modes import EvalMode
from tidal.worker.rng import stream_seed
from tidal.base.nest import to_numpy, to_tensor

ACTING_STREAM = 1  # stream_seed's stream of an evaluation's action draws (the envs' own seeds come first)


@dataclass
class EvalResult:
    returns: np.ndarray
    lengths: np.ndarray
    videos: list[str] = field(default_factory=list)  # the files the evaluation's recorded episodes went to

    @property
    def return_mean(self) -> float:
        return float(self.returns.mean())

    @property
    def return_std(self) -> float:
        return float(self.returns.std())

    @property
    def length_mean(self) -> float:
        return float(self.lengths.mean())

    def row(self, env_step: int, train_iter: int, wall_time: float, collect_return_mean: float) -> dict[str, float]:
        """This evaluation as a row of the run's evals.csv, beside `collect_return_mean`: the mean return of
        the training episodes finished since the previous evaluation (NaN: none finished)."""
        return dict(env_step=env_step, train_iter=train_iter, wall_time=wall_time, return_mean=self.return_mean,
                    return_std=self.return_std, episode_length_mean=self.length_mean,
                    collect_return_mean=collect_return_mean)


class Evaluator:
    """Evaluates on `n_episode` episodes every `eval_freq` train iterations or every `eval_freq_env_steps`
    env steps (0: never by env steps), whichever comes first, counted from the latest evaluation.

    Episodes are split evenly over the envs beforehand (env i runs its own quota), so short
    episodes do not crowd out long ones when several envs run in parallel. Each evaluation seeds its
    envs and the eval mode's own generator (what a sampling eval policy draws from) from `seed` and the
    train iteration, so it does not depend on earlier evaluations or on training's draws (and a resumed
    run evaluates exactly as the uninterrupted one would).
    """

    def __init__(self, env: Optional[EnvManager], policy: EvalMode, device: torch.device, n_episode: int,
                 eval_freq: int, stop_value: Optional[float] = None, seed: Optional[int] = None,
                 eval_freq_env_steps: int = 0) -> None:
        if n_episode < 1:
            raise ValueError(f'env.n_evaluator_episode must be >= 1, got {n_episode}')
        self.env, self.policy, self.device = env, policy, torch.device(device)
        self.n_episode, self.eval_freq, self.stop_value = n_episode, eval_freq, stop_value
        self.eval_freq_env_steps = eval_freq_env_steps
        self.seed = seed
        self.last_eval_iter: Optional[int] = None  # train iteration of the latest evaluation
        self.last_eval_env_step = 0  # env step of the latest evaluation
        self._handed: Optional[tuple[int, int, EvalResult]] = None

    def should_eval(self, train_iter: int, env_step: int = 0) -> bool:
        return (self.last_eval_iter is None or train_iter - self.last_eval_iter >= self.eval_freq
                or 0 < self.eval_freq_env_steps <= env_step - self.last_eval_env_step)

    def mark_evaluated(self, train_iter: int, env_step: int = 0) -> None:
        """Count the next evaluation from here (also where another process evaluated)."""
        self.last_eval_iter, self.last_eval_env_step = train_iter, env_step

    def reached_stop_value(self, result: EvalResult) -> bool:
        return self.stop_value is not None and result.return_mean >= self.stop_value

    @torch.no_grad()
    def eval(self, train_iter: int = 0, env_step: int = 0, record: Sequence[str | os.PathLike] = ()) -> EvalResult:
        """`record`: files for the first len(record) episodes, numbered env by env (env 0's quota first); the
        envs must be made for recording. Rendering draws no random numbers, so the returns stay the same."""
        self.mark_evaluated(train_iter, env_step)
        handed, self._handed = self._handed, None
        if handed is not None:
            if handed[:2] != (train_iter, env_step):
                raise TidalError(f'a seed group evaluated the weights of train iteration {handed[0]} for an '
                                 f'evaluation at train iteration {train_iter}: the group and the run are out of step')
            return handed[2]
        episodes = self.start(train_iter, env_step, record)
        while not episodes.done:
            episodes.step(self.policy.forward(episodes.obs)['action'])
        return episodes.result()

    def start(self, train_iter: int, env_step: int, record: Sequence[str | os.PathLike] = ()) -> EvalEpisodes:
        """Begin an evaluation (`eval` runs it to its end and counts it; a seed group steps its seeds' evaluations
        together and hands each its result)."""
        assert self.env is not None, 'an evaluator without envs (the run evaluates on a Ray actor) only keeps the schedule'
        videos = [str(path) for path in record][: self.n_episode]
        episodes = EvalEpisodes(self.env, self.policy, self.device, self.n_episode, videos)
        obs = self.env.reset(seed=None if self.seed is None else stream_seed(self.seed, train_iter))
        if self.seed is not None:
            self.policy.seed(stream_seed(self.seed, train_iter, ACTING_STREAM))
        self.policy.reset(None)
        episodes.obs = to_tensor(obs, self.device)
        return episodes

    def hand(self, train_iter: int, env_step: int, result: EvalResult) -> None:
        """Have the next `eval(train_iter, env_step)` return `result`, which a seed group made for its seeds
        together (`start`)."""
        self._handed = (train_iter, env_step, result)


class EvalEpisodes:
    """One evaluation under way: each env runs its quota of episodes, split evenly beforehand."""

    def __init__(self, env: EnvManager, policy: EvalMode, device: torch.device, n_episode: int,
                 videos: list[str]) -> None:
        self.env, self.policy, self.device = env, policy, device
        self.quota = np.full(env.num_envs, n_episode // env.num_envs)
        self.quota[: n_episode % env.num_envs] += 1
        self.videos = videos
        if videos:
            ends = np.cumsum(self.quota)
            env.plan_videos([videos[start:end] for start, end in zip(ends - self.quota, ends)])
        self.returns: list[float] = []
        self.lengths: list[int] = []
        self.obs: Any = None  # what the next step acts on

    @property
    def done(self) -> bool:
        return not (self.quota > 0).any()

    def step(self, action: torch.Tensor) -> None:
        """Step every env with the eval mode's `action` on `obs`; count the episodes that end within quota."""
        step = self.env.step(to_numpy(action))
        self.obs = to_tensor(step.obs, self.device)
        ended = np.flatnonzero(step.done)
        if len(ended):
            self.policy.reset(ended.tolist())
            counted = ended[self.quota[ended] > 0]
            self.returns.extend(step.episode_return[counted].tolist())
            self.lengths.extend(step.episode_length[counted].tolist())
            self.quota[counted] -= 1

    def result(self) -> EvalResult:
        return EvalResult(np.asarray(self.returns), np.asarray(self.lengths), self.videos)
