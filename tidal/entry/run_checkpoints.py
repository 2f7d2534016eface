"""When a run's latest checkpoint is due, and its checkpoint files (the latest, which `tidal resume` continues from,
and the best, which evaluation and deployment load)."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Optional

from tidal.worker.checkpoint import save_checkpoint

LATEST = 'latest.pt'  # the checkpoint `tidal resume` continues from


class CheckpointSchedule:
    """Due at the start, when asked (the learner's save period, the warm-up's end, a seed group), and every
    `save_secs` seconds (None: never by time)."""

    def __init__(self, run_dir: Path, save_secs: Optional[float]) -> None:
        self.run_dir = run_dir
        self.latest_name = LATEST  # a seed group stages its seeds' checkpoints under another name, then commits them
        self.saved_iter: Optional[int] = None  # train iteration of the latest checkpoint
        self._due = True  # a fresh run checkpoints at its start
        self._save_secs = save_secs
        self._last_save = 0.0

    def start(self, now: float) -> None:
        self._last_save = now

    def request(self) -> None:
        self._due = True

    def due(self) -> bool:
        return self._due or (self._save_secs is not None and time.monotonic() - self._last_save >= self._save_secs)

    def resumed_at(self, train_iter: int) -> None:
        """The run continues from its checkpoint of `train_iter`."""
        self.saved_iter = train_iter
        self._due = False

    def write_latest(self, state: dict[str, Any], train_iter: int, write: bool) -> None:
        """Save `state` (`write`: this process writes the run folder) and start the next period."""
        if write:
            save_checkpoint(state, self.run_dir / 'ckpt' / self.latest_name)
        self.saved_iter = train_iter
        self._due, self._last_save = False, time.monotonic()

    def write_best(self, policy_state: dict[str, Any], env_step: int, train_iter: int, best_return: float) -> None:
        """Only what evaluation and deployment need, of the weights evaluated."""
        save_checkpoint({'policy': policy_state, 'env_step': env_step, 'train_iter': train_iter,
                         'best_return': best_return}, self.run_dir / 'ckpt' / 'best.pt')

    def last_good(self) -> str:
        """Where a diverged run can go back to, in words."""
        if self.saved_iter is None:
            return 'no checkpoint was written before it'
        return f"the last good checkpoint is {self.run_dir / 'ckpt' / 'latest.pt'} (train iteration {self.saved_iter})"
