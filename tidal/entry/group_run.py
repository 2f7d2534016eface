"""A seed group's driver: its seeds split into shares, each trained stacked by a process of its own (or, with one
share, in this process), under one progress display, one aggregate and one end line.

A share is trained by `python -m tidal.entry.group_worker` (or a Ray task, `tidal.entry.group_ray`), which
builds its seeds from their folders, so the driver hands it only the group folder and the seeds. Each worker
reports its seeds' env steps after every round on a pipe of its own and its lines on its stdout and stderr,
which the driver writes above the progress bar. A signal to the driver reaches every worker as SIGTERM: each
checkpoints its seeds and stops. A worker that dies (killed, out of memory) leaves its seeds at their last
checkpoint: each is named in one line, the other workers finish, and the group ends incomplete (`GroupIncomplete`)
for `tidal resume` to continue.
"""
from __future__ import annotations

import math
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from easydict import EasyDict
from tqdm import tqdm

from tidal.base.device import policy_device
from tidal.base.errors import TidalError
from tidal.entry.group_aggregate import AGGREGATE_DIR, group_end_line, group_summary
from tidal.entry.group_shares import ShareExit, ShareRunner, seed_list
from tidal.entry.result import GroupResult
from tidal.entry.run import run_header
from tidal.entry.seed_group import Loaded, group_interrupted
from tidal.entry.seed_turns import share_from_folders
from tidal.worker.distributed import handle_signals
from tidal.worker.logger import write_summary
from tidal.worker.plot import plot_curves
from tidal.worker.run_groups import expand_seed_groups, read_group, seed_folder

PLOT_SECS = 30.0


class GroupIncomplete(TidalError):
    """Some seeds of a group stopped short of their end without a signal (their process died); the others ended.
    `tidal resume` continues the stopped ones from their last checkpoints."""

    exit_code = 3


def drive_group(group_dir: Path, shares: Sequence[Sequence[int]], cfg: EasyDict, why: str, progress: bool,
                runner: Optional[ShareRunner] = None, fresh: bool = False, loaded: Loaded = None) -> GroupResult:
    """Train every share of the group to its end: in this process when `trains_here`, else each by `runner` (or
    processes on this machine). `cfg` is any seed's config (for the header), `why` says how the split was chosen,
    `loaded` the seeds' checkpoints a resume already read (used where the group trains here). A `fresh` group's
    folder is removed again if its seeds cannot be built (a bad config value, an env that fails to start).
    Returns every seed's result, in group.json's order."""
    seeds = [seed for share in shares for seed in share]
    spec = read_group(group_dir)
    print(f"tidal: training {cfg.policy.type} on {cfg.env.env_id}, seeds {seed_list(seeds)} in {group_dir}: "
          f"{split_words(shares, spec.get('stacked', True), why)}, {run_header(cfg, policy_device(cfg.policy))}",
          flush=True)
    display = GroupDisplay(group_dir, spec['max_env_step'], len(seeds), progress)
    try:
        if trains_here(shares, runner):
            _train_here(group_dir, shares[0], display, loaded)
        else:
            _train_shares(group_dir, shares, runner or _local_runner(cfg), display)
    except NotBuilt as err:
        display.close(aggregate=False)
        if fresh:
            shutil.rmtree(group_dir, ignore_errors=True)
        if err.__cause__ is not None:
            raise err.__cause__ from None
        raise TidalError(str(err)) from None
    finally:
        display.close()
    print(f'tidal: {group_end_line(group_dir, display.summary)}', flush=True)
    return group_result(group_dir)


def trains_here(shares: Sequence[Sequence[int]], runner: Optional[ShareRunner]) -> bool:
    """Whether the group trains in the process that drives it: one share, and no runner (Ray) to hand it to."""
    return runner is None and len(shares) == 1


def split_words(shares: Sequence[Sequence[int]], stacked: bool, why: str) -> str:
    """'1 process, stacked', or '2 processes of 4 seeds each in turn (one per usable core; ...)', in words for the
    header."""
    form = 'stacked' if stacked else 'in turn'
    sizes = sorted({len(share) for share in shares}, reverse=True)
    each = f'{sizes[0]} seeds' if len(sizes) == 1 else ' or '.join(map(str, sizes)) + ' seeds'
    split = '1 process' if len(shares) == 1 else f'{len(shares)} processes of {each} each'
    return f"{split}, {form}{f' ({why})' if why else ''}"


def group_result(group_dir: Path) -> GroupResult:
    """Every seed's result (policy, run folder, evaluations), read from the group folder when first asked for."""
    return GroupResult(group_dir, tuple(seed_folder(group_dir, seed) for seed in read_group(group_dir)['seeds']))


class GroupDisplay:
    """The group's progress bar over all its seeds' env steps, its aggregate curve redrawn every PLOT_SECS, and
    at the end its aggregate summary (`summary`)."""

    def __init__(self, group_dir: Path, max_env_step: Optional[int], seeds: int, progress: bool) -> None:
        self.group_dir = group_dir
        self.steps: dict[int, int] = {}
        self.first: dict[int, int] = {}  # each seed's env step when this process first heard of it
        self.start = time.monotonic()
        self.summary: dict[str, Any] = {}
        total = None if max_env_step is None else max_env_step * seeds
        self.bar = tqdm(total=total, unit='step', dynamic_ncols=True, disable=not progress, mininterval=1.0)
        self._last_plot = -math.inf
        self.closed = False

    def update(self, steps: dict[int, int]) -> None:
        for seed, step in steps.items():
            self.first.setdefault(seed, step)
        self.steps.update(steps)
        self.bar.update(sum(self.steps.values()) - self.bar.n)
        if time.monotonic() - self._last_plot >= PLOT_SECS:
            self.plot()

    def write(self, line: str, error: bool = False) -> None:
        """A line above the bar."""
        self.bar.write(line, file=sys.stderr if error else sys.stdout)

    def plot(self) -> None:
        self._last_plot = time.monotonic()
        runs = expand_seed_groups([self.group_dir])  # with the seeds that ended before a resume
        if not runs:
            return
        out = self.group_dir / AGGREGATE_DIR
        out.mkdir(exist_ok=True)
        try:
            plot_curves(runs, out / 'curve.png', title=f'{self.group_dir.name} ({len(runs)} seeds)')
        except (OSError, TidalError):  # a seed without evaluations yet, a full disk: the next plot tries again
            pass

    def close(self, runs: Sequence[Any] = (), aggregate: bool = True) -> None:
        """The aggregate curve and summary.json (`runs`: seeds trained in this process, read as they stand); once."""
        if self.closed:
            return
        self.closed = True
        self.bar.close()
        if not aggregate:
            return
        made = sum(self.steps[seed] - self.first[seed] for seed in self.steps)
        self.summary = group_summary(self.group_dir, time.monotonic() - self.start, made, runs)
        try:
            self.plot()
            (self.group_dir / AGGREGATE_DIR).mkdir(exist_ok=True)
            write_summary(self.group_dir / AGGREGATE_DIR, self.summary)
        except OSError:
            pass


class NotBuilt(Exception):
    """The group's seeds could not be built (their cause, or the message of a worker's error): nothing trained."""


def _train_here(group_dir: Path, seeds: Sequence[int], display: GroupDisplay, loaded: Loaded) -> None:
    """One share, in this process."""
    try:
        group = share_from_folders(group_dir, seeds, loaded)
    except BaseException as err:
        raise NotBuilt() from err
    display.update(group.env_steps())
    try:
        group.train(on_round=display.update)
    finally:
        display.update(group.env_steps())
        display.close(group.runs())


def _local_runner(cfg: EasyDict) -> ShareRunner:
    from tidal.entry.group_processes import ProcessRunner
    return ProcessRunner(cfg)


def _train_shares(group_dir: Path, shares: Sequence[Sequence[int]], runner: ShareRunner,
                  display: GroupDisplay) -> None:
    """Every share by `runner`, side by side; a signal here stops them all, each checkpointed."""
    exits: list[ShareExit] = []
    signum: list[int] = []

    def handle(received: int, frame: Any) -> None:
        if received == signal.SIGINT and signum:
            raise KeyboardInterrupt  # a second Ctrl-C: stop at once (the finally below kills the workers)
        signum.append(received)
        runner.stop_all()
    restore = handle_signals(handle)
    try:
        runner.start(group_dir, shares)
        exits = runner.wait(display.update, display.write)
    finally:
        restore()
        runner.close()
    errors = [share.error for share in exits if share.error is not None]
    if errors:
        raise NotBuilt(errors[0])
    interrupted = [share for share in exits if share.signum is not None]
    lost = [share for share in exits if share.died is not None]
    for share in lost:
        for seed in share.live:
            display.write(f'tidal: seed {seed} stopped: {share.died}; its last checkpoint is kept', error=True)
    stop = signum[0] if signum else next((share.signum for share in interrupted if share.signum), None)
    if stop is not None:
        raise group_interrupted(group_dir, stop)
    if lost:
        stopped = [seed for share in lost for seed in share.live]
        raise GroupIncomplete(f"group '{group_dir}' is incomplete: {len(stopped)} of its seeds stopped short "
                              f"({seed_list(stopped)}); continue them with: tidal resume {group_dir}")
