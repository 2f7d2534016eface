"""What a run tells as it goes: its log files and trackers, the progress bar, the curve, the train log, the events
the user should see now, and its clock."""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

from tqdm import tqdm

from tidal.base.collector import Collector
from tidal.worker.distributed import NullLogger
from tidal.worker.learner import Learner, scalars
from tidal.worker.logger import RunLogger
from tidal.worker.plot import plot_curves

PLOT_SECS = 30.0  # redraw curve.png at most this often (matplotlib is slow); the run's end always draws it


class RunReport:
    """The run's log (rank 0's `RunLogger`, a `NullLogger` elsewhere), its progress bar and its curve."""

    def __init__(self, run_dir: Path, title: str, logger: RunLogger | NullLogger) -> None:
        self.run_dir, self.title, self.logger = run_dir, title, logger
        self.plot_secs = PLOT_SECS  # a seed group draws its aggregate instead, and each seed's curve at its end
        # the first curve after PLOT_SECS: a run shorter than that draws its curve once, at its end
        self._last_plot = time.monotonic()
        self.bar: Optional[tqdm[Any]] = None

    def open_bar(self, total: Optional[int], initial: int, shown: bool) -> None:
        self.bar = tqdm(total=total, initial=initial, unit='step', dynamic_ncols=True, disable=not shown,
                        mininterval=1.0)

    def advance(self, env_step: int) -> None:
        if self.bar is not None:
            self.bar.update(env_step - self.bar.n)

    def show(self, progress: dict[str, Any]) -> None:
        """The latest evaluation beside the bar."""
        if self.bar is not None:
            self.bar.set_postfix(progress, refresh=False)

    def close_bar(self) -> None:
        if self.bar is not None:
            self.bar.close()

    def notify(self, message: str) -> None:
        """An event the user should see now (a restarted worker): in the log and on stderr."""
        self.logger.info(message)
        tqdm.write(f'tidal: {message}', file=sys.stderr)

    def plot_if_due(self) -> None:
        if math.isfinite(self.plot_secs) and time.monotonic() - self._last_plot >= self.plot_secs:
            self.plot()

    def plot(self) -> None:
        plot_curves([self.run_dir], self.run_dir / 'curve.png', title=self.title)
        self._last_plot = time.monotonic()


class CollectReturns:
    """Returns of the training episodes the collector finished that the train log (collect_return) and the next eval
    row (collect_return_mean) have not yet reported: each reader takes its own."""

    def __init__(self, collector: Collector) -> None:
        self._collector = collector
        self._to_log: list[float] = []
        self._to_eval: list[float] = []

    def for_log(self) -> list[float]:
        self._take()
        taken, self._to_log = self._to_log, []
        return taken

    def for_eval(self) -> list[float]:
        self._take()
        taken, self._to_eval = self._to_eval, []
        return taken

    def _take(self) -> None:
        """Hand the returns the collector finished since the last call to both readers (collector.episodes has room
        for one)."""
        returns = self._collector.episodes.pop().returns
        self._to_log.extend(returns)
        self._to_eval.extend(returns)

    def state_dict(self) -> dict[str, list[float]]:
        return {'log': list(self._to_log), 'eval': list(self._to_eval)}

    def load_state_dict(self, state: dict[str, list[float]]) -> None:
        self._to_log, self._to_eval = list(state.get('log', [])), list(state.get('eval', []))


class TrainLog:
    """The learner's log hook: the update's scalars, the collector's figures (and the eval actor's, from `extra`) and
    the mean return of the training episodes finished since the last train log."""

    def __init__(self, logger: RunLogger | NullLogger, collector: Collector, returns: CollectReturns,
                 env_step: Callable[[], int], check_finite: Callable[[], None],
                 extra: Callable[[], dict[str, float]]) -> None:
        self._logger, self._collector, self._returns = logger, collector, returns
        self._env_step, self._check_finite, self._extra = env_step, check_finite, extra

    def __call__(self, learner: Learner, info: dict[str, Any]) -> None:
        self._check_finite()
        values = scalars(info, learner.logged_names)
        values.update(self._collector.monitor())
        values.update(self._extra())
        collected = self._returns.for_log()
        if collected:
            values['collect_return'] = sum(collected) / len(collected)
        self._logger.scalars('train', values, self._env_step(), learner.train_iter)


class Clock:
    """The run's training seconds, counting those of the processes before a resume."""

    def __init__(self) -> None:
        self.elapsed = 0.0  # training seconds before this process
        self._start = 0.0

    def start(self, now: float) -> None:
        self._start = now

    def wall_time(self) -> float:
        return self.elapsed + time.monotonic() - self._start
