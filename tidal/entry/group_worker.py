"""One share of a seed group, trained in this process: `python -m tidal.entry.group_worker GROUP --seeds 0,1
--progress-fd N`, started by the group's driver (`tidal.entry.group_processes`).

It builds its seeds from their folders (their configs, their latest checkpoints when resumed), trains them
stacked, and after each round writes its seeds' env steps to the progress pipe as one JSON line. Should the driver
die, the pipe breaks: the worker then checkpoints its seeds and stops, as on SIGTERM, so no worker outlives its
group. Exit codes: 0 ended, 128 + signal number stopped by a signal (checkpointed), 2 an error (said in one line).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import IO, TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:
    from tidal.entry.seed_turns import Share

REPORT_EVERY_S = 0.25  # at most this often, unless a seed ended


class Reporter:
    """Writes the share's progress to the driver; hears from the broken pipe (or a new parent) that the driver
    is gone."""

    def __init__(self, out: IO[str], group: 'Share') -> None:
        self.out, self.group = out, group
        self.parent = os.getppid()
        self.last = -float('inf')
        self.live: list[int] = group.live_seeds()
        self.orphaned = False

    def __call__(self, steps: dict[int, int], final: bool = False) -> None:
        live = [] if final else self.group.live_seeds()
        if not final and live == self.live and time.monotonic() - self.last < REPORT_EVERY_S:
            return
        self.live, self.last = live, time.monotonic()
        if self.orphaned:
            return
        try:
            if os.getppid() != self.parent:
                raise BrokenPipeError
            self.out.write(json.dumps({'steps': steps, 'live': live}) + '\n')
            self.out.flush()
        except (BrokenPipeError, OSError):
            self.orphan()

    def orphan(self) -> None:
        """The driver is gone: stop every seed at its next decision, checkpointed, and write nowhere."""
        self.orphaned = True
        sys.stdout = sys.stderr = open(os.devnull, 'w')
        self.group.request_stop(signal.SIGTERM)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog='python -m tidal.entry.group_worker', description=__doc__.splitlines()[0])
    parser.add_argument('group_dir', type=Path)
    parser.add_argument('--seeds', required=True, help='comma-separated seeds of the share')
    parser.add_argument('--progress-fd', type=int, required=True, help='the pipe the driver reads progress from')
    args = parser.parse_args(argv)
    out = os.fdopen(args.progress_fd, 'w')
    from tidal.base.errors import TidalError
    from tidal.entry.seed_turns import share_from_folders, train_reporting
    try:
        group = share_from_folders(args.group_dir, [int(seed) for seed in args.seeds.split(',')])
    except TidalError as err:  # before any seed trained: the driver raises it as the group's error
        out.write(json.dumps({'error': str(err)}) + '\n')
        out.flush()
        return 2
    try:
        signum = train_reporting(group, Reporter(out, group))
    except TidalError as err:
        print(f'tidal: error: {err}', file=sys.stderr)
        return 2
    return 0 if signum is None else 128 + signum


if __name__ == '__main__':
    sys.exit(main())
