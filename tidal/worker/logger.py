"""What a run writes about itself: tensorboardX events, a plain-text log and evals.csv.

A resumed run must not repeat what the killed process wrote after its last checkpoint. The
checkpoint records how long `log.txt` and `evals.csv` were (`position`), and the resumed logger cuts
them back to that length, and the event files back to the checkpoint's env step (`event_files`); the
`purge_step` of the new event file tells TensorBoard the same.

The tracking services of `logger.backends` (W&B, MLflow: `tidal.worker.tracking`) get every scalar the event file
gets, at the same env step. They keep what they were sent: a resume after a kill continues their run (its id is
kept with the checkpoint's position) and sends again the env steps logged after the checkpoint.
"""
from __future__ import annotations

import csv
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from tensorboardX import SummaryWriter

from tidal.base.errors import first_line
from tidal.base.files import write_text_atomic
from tidal.worker.event_files import cut_events_after, next_writer_number
from tidal.worker.plot import EVAL_COLUMNS
from tidal.worker.tracking import Tracker

FLUSH_SECS = 5  # TensorBoard events reach the disk at least this often, so a killed run keeps them
TRACKED_FILES = ('curve.png', 'config.yaml', 'summary.json')  # of the run folder, uploaded at a run's end


class RunLogger:
    """Writes scalars to `<run>/log/` (tensorboardX, unless `tensorboard` is off) and to the `trackers`, and lines
    to `<run>/log.txt`.

    Every scalar is stepped by the run's `clock`, env steps (or train iterations in a run that learns offline):
    the one clock that only moves forward across a resume; `resume_from` is the `position()` saved with the
    checkpoint a run resumes from.
    """

    def __init__(self, run_dir: str | os.PathLike, resume_from: Optional[Mapping[str, Any]] = None,
                 trackers: Sequence[Tracker] = (), tensorboard: bool = True, clock: str = 'env_step') -> None:
        self.run_dir = Path(run_dir)
        self.clock = clock
        self.trackers = list(trackers)
        self._summary: Mapping[str, Any] = {}
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._text_path = self.run_dir / 'log.txt'
        self._evals_path = self.run_dir / 'evals.csv'
        purge_step = None
        log_dir = self.run_dir / 'log'
        if resume_from is not None:
            _truncate(self._text_path, resume_from['text_bytes'])
            _truncate(self._evals_path, resume_from['evals_bytes'])
            purge_step = resume_from['env_step'] + 1
            if log_dir.is_dir():
                cut_events_after(log_dir, resume_from['env_step'])
        self._event_error: Optional[OSError] = None
        self._writer: Optional[SummaryWriter] = None
        if tensorboard:
            self._open_events(log_dir, purge_step)
        self._text = open(self._text_path, 'a', buffering=1, encoding='utf-8')

    def _open_events(self, log_dir: Path, purge_step: Optional[int]) -> None:
        # event files are named by the second they open in: a resume within the same second as the killed
        # process would reopen (and overwrite) its file, so each writer of the run adds its own number
        self._writer = SummaryWriter(str(log_dir), purge_step=purge_step, flush_secs=FLUSH_SECS,
                                     filename_suffix=f'.{next_writer_number(log_dir)}')
        self._guard_event_writes()
        self._writer.flush()  # the event file holds its header from the start, never 0 bytes
        self._raise_event_error()

    def _guard_event_writes(self) -> None:
        """tensorboardX writes events from a thread: on a full disk that thread would die printing a
        traceback, and the next events would block forever on its full queue. The writes it makes are
        wrapped so that an OSError is kept for the run's thread (`_raise_event_error`) and later events are
        dropped, while the thread lives on to drain its queue."""
        assert self._writer is not None
        for file_writer in self._writer.all_writers.values():
            events = file_writer.event_writer._ev_writer
            for name in ('write_event', 'flush'):
                setattr(events, name, self._guarded(getattr(events, name), events._file_name))

    def _guarded(self, write: Callable[..., Any], file_name: str) -> Callable[..., Any]:
        def guarded(*args: Any) -> Any:
            if self._event_error is not None:
                return None  # the file failed before: what is still queued is lost
            try:
                return write(*args)
            except OSError as err:
                self._event_error = OSError(err.errno, err.strerror, file_name)
                return None
        return guarded

    def _raise_event_error(self) -> None:
        """The event file's write error, in the run's thread, where the run turns it into one line."""
        if self._event_error is not None:
            err = self._event_error
            raise OSError(err.errno, err.strerror, err.filename)

    def info(self, message: str) -> None:
        self._text.write(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] {message}\n")

    def exception(self, message: str, err: BaseException) -> None:
        """One line saying what failed, then the full traceback, for the log file only."""
        self.info(message)
        self._text.write(''.join(traceback.format_exception(type(err), err, err.__traceback__)))

    def scalars(self, prefix: str, values: Mapping[str, float], env_step: int, train_iter: int) -> None:
        self._raise_event_error()
        named = {f'{prefix}/{key}': float(value) for key, value in values.items()}
        if self._writer is not None:
            for name, value in named.items():
                self._writer.add_scalar(name, value, env_step)
        for tracker in list(self.trackers):
            self._track(tracker, lambda: tracker.log(named, env_step))
        where = f'env step {env_step}, iter {train_iter}' if self.clock == 'env_step' else f'iter {train_iter}'
        self.info(f'{prefix} @ {where}: '
                  + ', '.join(f'{k}={v:.4g}' for k, v in values.items()))

    def evaluation(self, row: Mapping[str, float]) -> None:
        """Append one evaluation to evals.csv and to the event file (collect_return_mean where some training
        episode finished). A file begun before a column existed (a resumed older run) keeps its header."""
        new = not self._evals_path.exists() or self._evals_path.stat().st_size == 0
        # a run's own columns (an offline run's normalised score) after the common ones
        columns = [*EVAL_COLUMNS, *(key for key in row if key not in EVAL_COLUMNS)] if new else _header(self._evals_path)
        with open(self._evals_path, 'a', newline='') as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            if new:
                writer.writeheader()
            writer.writerow({key: row[key] for key in columns})
        logged = ['return_mean', 'return_std', 'episode_length_mean', *(['normalized_return_mean']
                                                                         if 'normalized_return_mean' in row else [])]
        if math.isfinite(row['collect_return_mean']):
            logged.append('collect_return_mean')
        self.scalars('eval', {key: row[key] for key in logged}, int(row[self.clock]), int(row['train_iter']))

    def _track(self, tracker: Tracker, send: Callable[[], None]) -> None:
        """Send to a tracking service; one that fails (its server went away) is said once and dropped, and the run
        goes on with the others and its own files."""
        try:
            send()
        except Exception as err:
            self.trackers.remove(tracker)
            message = f'logger.backends: {tracker.name} failed and gets nothing more from this run: {first_line(err)}'
            self.info(message)
            print(f'tidal: {message}', file=sys.stderr, flush=True)

    def position(self, env_step: int) -> dict[str, Any]:
        """How far the logs reach now, and the tracking services' run ids: saved with a checkpoint, handed back as
        `resume_from`."""
        self._text.flush()
        if self._writer is not None:
            self._writer.flush()
        self._raise_event_error()
        return {'env_step': env_step, 'text_bytes': _size(self._text_path), 'evals_bytes': _size(self._evals_path),
                'tracking': {tracker.name: tracker.run_id for tracker in self.trackers}}

    def summary(self, values: Mapping[str, Any]) -> None:
        write_summary(self.run_dir, values)
        self._summary = dict(values)

    def close(self) -> None:
        """End the tracking services' runs (uploading the run folder's files), close the text log and the event
        files; on a full disk all still close, then the first error is raised."""
        files = [self.run_dir / name for name in TRACKED_FILES if (self.run_dir / name).is_file()]
        ended_well = not str(self._summary.get('outcome', 'stopped')).startswith('stopped')
        for tracker in list(self.trackers):
            self._track(tracker, lambda: tracker.finish(files, self._summary, ended_well))
        self.trackers = []
        errors: list[OSError] = []
        try:
            self._text.close()
        except OSError as err:
            errors.append(err)
        try:
            if self._writer is not None:
                self._writer.close()
        except OSError as err:
            assert self._writer is not None
            # a full disk or read-only folder: the events cannot be written any more. Mark the event
            # files closed, or tensorboardX retries at interpreter exit and prints a traceback.
            for file_writer in self._writer.all_writers.values():
                file_writer.event_writer._closed = True
            errors.append(err)
        try:
            self._raise_event_error()
        except OSError as err:
            errors.append(err)
        if errors:
            raise errors[0]


def write_summary(run_dir: str | os.PathLike, values: Mapping[str, Any]) -> None:
    """`summary.json`, written atomically: a run's budget from its start, its outcome at its end."""
    write_text_atomic(Path(run_dir) / 'summary.json', json.dumps(dict(values), indent=2))


def _header(path: Path) -> tuple[str, ...]:
    with open(path, newline='') as f:
        return tuple(next(csv.reader(f)))


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _truncate(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size > size:
        with open(path, 'r+b') as f:
            f.truncate(size)
