"""A share of a seed group whose seeds train one after another, each as a plain run in its folder: step for step
the run `tidal train CONFIG -s SEED` makes. A group takes this form where stacking its seeds' updates would not
pay (`tidal.entry.group_shares.stacking_pays`: a large update on a CPU); its processes then queue their seeds
instead, and each pays its start-up once for all of them.

`share_from_folders` gives a share of either form, as group.json says the group was split.
"""
from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence, Union

from tqdm import tqdm

from tidal.base.errors import TidalError
from tidal.entry.run import Run, RunInterrupted
from tidal.entry.seed_group import Loaded, SeedGroup, group_interrupted, seed_from_folder
from tidal.registry import feed_class, policy_class
from tidal.worker.distributed import handle_signals
from tidal.worker.run_groups import read_group

Share = Union[SeedGroup, 'SeedsInTurn']  # what a process of a group trains


def share_from_folders(group_dir: Path, seeds: Sequence[int], loaded: Loaded = None) -> Share:
    """The share `seeds` of a group folder, stacked or in turn as the group was split (group.json's 'stacked';
    groups from before it stacked)."""
    if read_group(group_dir).get('stacked', True):
        return SeedGroup.from_folders(group_dir, seeds, loaded)
    return SeedsInTurn(group_dir, seeds, loaded)


def train_reporting(group: Share, report: Callable[..., None]) -> Optional[int]:
    """Train a share of a group in a process of its own, `report(steps)` hearing its seeds' env steps at the start
    and after each round, and `report(steps, final=True)` at the end however it ended. Returns None when it ended,
    the signal's number when a signal stopped it (every seed checkpointed)."""
    report(group.env_steps())
    try:
        group.train(on_round=report)
    except RunInterrupted as err:
        return err.signum
    finally:
        report(group.env_steps(), final=True)
    return None


class SeedsInTurn:
    """Seeds trained one after another, each a `Run` built from its folder when its turn comes (its config, its
    latest checkpoint where resumed). A seed that fails stops alone, in one line; a signal checkpoints the seed
    that trains and stops the share, the seeds after it not started (`tidal resume` continues them)."""

    def __init__(self, group_dir: Path, seeds: Sequence[int], loaded: Loaded = None) -> None:
        spec = read_group(group_dir)
        self.group_dir = group_dir
        self.max_env_step, self.max_train_iter = spec['max_env_step'], spec['max_train_iter']
        self.loaded = loaded
        self.pending = list(seeds)  # not yet ended, the one training first
        self.steps: dict[int, int] = {}  # env steps of the seeds built so far
        self.signum: Optional[int] = None
        self.run: Optional[Run] = self._build(self.pending[0])  # a config or env error shows before any training

    def env_steps(self) -> dict[int, int]:
        if self.run is not None:
            self.steps[self.run.cfg.seed] = self.run.env_step
        return dict(self.steps)

    def live_seeds(self) -> list[int]:
        return list(self.pending)

    def runs(self) -> list[Run]:
        """Runs of this share still open (none: each ended run wrote its summary)."""
        return []

    def request_stop(self, signum: int) -> None:
        """Have the training seed checkpoint at its next decision and the share stop, as `signum` arriving would."""
        self.signum = signum
        if self.run is not None:
            self.run.lockstep.signum = signum

    def train(self, on_round: Optional[Callable[[dict[int, int]], None]] = None) -> None:
        """Train the seeds in turn to their ends; `on_round` hears every built seed's env step after each feed step."""
        def report() -> None:
            if on_round is not None:
                on_round(self.env_steps())
        restore_signals = handle_signals(self._between_runs)
        try:
            while self.pending and self.signum is None:
                seed = self.pending[0]
                try:
                    run = self.run or self._build(seed)
                    self.run = run
                    report()
                    run.train(on_step=report)
                except RunInterrupted as err:
                    self.signum = err.signum
                    break
                except TidalError as err:
                    tqdm.write(f'tidal: seed {seed} stopped: {err}', file=sys.stderr)
                self.env_steps()
                self.run = None
                self.pending.pop(0)
                report()
        finally:
            restore_signals()
        if self.signum is not None:
            raise group_interrupted(self.group_dir, self.signum)

    def _between_runs(self, signum: int, frame: Any) -> None:
        """A signal while no run catches its own (one is being built): stop before the next seed."""
        if signum == signal.SIGINT and self.signum is not None:
            raise KeyboardInterrupt
        self.request_stop(signum)

    def _build(self, seed: int) -> Run:
        cfg, run_dir, state = seed_from_folder(self.group_dir, seed, self.loaded)
        feed_cls = feed_class(policy_class(cfg.policy.type, cfg.policy))
        run = Run(cfg, run_dir, feed_cls, self.max_env_step, self.max_train_iter, progress=False, resume_state=state)
        self.steps[seed] = run.env_step
        return run
