"""What a run writes about itself: tensorboardX events, a plain-text log and evals.csv.

A resumed run must not repeat what the killed process wrote after its last checkpoint. The
checkpoint records how long `log.txt` and `evals.csv` were (`position`), and the resumed logger cuts
them back to that length, and the event files back to the checkpoint's env step (`event_files`); the
`purge_step` of the new event file tells TensorBoard the same.
"""
from __future__ import annotations

import csv
import json
import math
import os
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from tensorboardX import SummaryWriter

from tidal.worker.event_files import cut_events_after, next_writer_number
from tidal.worker.plot import EVAL_COLUMNS

FLUSH_SECS = 5  # TensorBoard events reach the disk at least this often, so a killed run keeps them


class RunLogger:
    """Writes scalars to `<run>/log/` (tensorboardX) and lines to `<run>/log.txt`.

    Every TensorBoard event is stepped by env steps, the one clock that only moves forward across
    a resume; `resume_from` is the `position()` saved with the checkpoint a run resumes from.
    """

    def __init__(self, run_dir: str | os.PathLike, resume_from: Optional[Mapping[str, int]] = None) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._text_path = self.run_dir / 'log.txt'
        self._evals_path = self.run_dir / 'evals.csv'
        purge_step = None
        log_dir = self.run_dir / 'log'
        if resume_from is not None:
            _truncate(self._text_path, resume_from['text_bytes'])
            _truncate(self._evals_path, resume_from['evals_bytes'])
            purge_step = resume_from['env_step'] + 1
            cut_events_after(log_dir, resume_from['env_step'])
        # event files are named by the second they open in: a resume within the same second as the killed
        # process would reopen (and overwrite) its file, so each writer of the run adds its own number
        self._writer = SummaryWriter(str(log_dir), purge_step=purge_step, flush_secs=FLUSH_SECS,
                                     filename_suffix=f'.{next_writer_number(log_dir)}')
        self._event_error: Optional[OSError] = None
        self._guard_event_writes()
        self._writer.flush()  # the event file holds its header from the start, never 0 bytes
        self._raise_event_error()
        self._text = open(self._text_path, 'a', buffering=1, encoding='utf-8')

    def _guard_event_writes(self) -> None:
        """tensorboardX writes events from a thread: on a full disk that thread would die printing a
        traceback, and the next events would block forever on its full queue. The writes it makes are
        wrapped so that an OSError is kept for the run's thread (`_raise_event_error`) and later events are
        dropped, while the thread lives on to drain its queue."""
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
        for key, value in values.items():
            self._writer.add_scalar(f'{prefix}/{key}', value, env_step)
        self.info(f'{prefix} @ env step {env_step}, iter {train_iter}: '
                  + ', '.join(f'{k}={v:.4g}' for k, v in values.items()))

    def evaluation(self, row: Mapping[str, float]) -> None:
        """Append one evaluation to evals.csv and to the event file (collect_return_mean where some training
        episode finished). A file begun before a column existed (a resumed older run) keeps its header."""
        new = not self._evals_path.exists() or self._evals_path.stat().st_size == 0
        columns = EVAL_COLUMNS if new else _header(self._evals_path)
        with open(self._evals_path, 'a', newline='') as f:
            writer = csv.DictWriter(f, fieldnames=columns)
            if new:
                writer.writeheader()
            writer.writerow({key: row[key] for key in columns})
        logged = ['return_mean', 'return_std', 'episode_length_mean']
        if math.isfinite(row['collect_return_mean']):
            logged.append('collect_return_mean')
        self.scalars('eval', {key: row[key] for key in logged}, int(row['env_step']), int(row['train_iter']))

    def position(self, env_step: int) -> dict[str, int]:
        """How far the logs reach now: saved with a checkpoint, handed back as `resume_from`."""
        self._text.flush()
        self._writer.flush()
        self._raise_event_error()
        return {'env_step': env_step, 'text_bytes': _size(self._text_path), 'evals_bytes': _size(self._evals_path)}

    def summary(self, values: Mapping[str, Any]) -> None:
        write_summary(self.run_dir, values)

    def close(self) -> None:
        """Close the text log and the event files; on a full disk both still close, then the first error
        is raised."""
        errors: list[OSError] = []
        try:
            self._text.close()
        except OSError as err:
            errors.append(err)
        try:
            self._writer.close()
        except OSError as err:
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
    tmp = Path(run_dir) / '.summary.json.tmp'
    try:
        with open(tmp, 'w') as f:
            json.dump(dict(values), f, indent=2)
        os.replace(tmp, Path(run_dir) / 'summary.json')
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failed write


def _header(path: Path) -> tuple[str, ...]:
    with open(path, newline='') as f:
        return tuple(next(csv.reader(f)))


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def _truncate(path: Path, size: int) -> None:
    if path.exists() and path.stat().st_size > size:
        with open(path, 'r+b') as f:
            f.truncate(size)
