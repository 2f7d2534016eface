"""A resumed run's TensorBoard event files, cut back to its checkpoint.

The new event file's `purge_step` makes TensorBoard itself drop the killed process's events after the
checkpoint, but readers that read the files as they are (tbparse, a notebook's summary iterator, a sync to
a tracking service) would see those events twice. So a resume rewrites each earlier file without them,
atomically, and removes a file left with no scalar at all (one a process wrote its header to and was killed).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterator

from tensorboardX.proto.event_pb2 import Event
from tensorboardX.record_writer import masked_crc32c

EVENT_GLOB = 'events.out.tfevents.*'
_LENGTH = struct.Struct('<Q')
_CRC = struct.Struct('<I')


def event_records(path: Path) -> Iterator[bytes]:
    """The records of an event file in order; a record cut short or damaged (a kill inside its write) ends it."""
    with open(path, 'rb') as file:
        while True:
            header = file.read(_LENGTH.size + _CRC.size)
            if len(header) < _LENGTH.size + _CRC.size:
                return
            length_bytes, (length_crc,) = header[:_LENGTH.size], _CRC.unpack(header[_LENGTH.size:])
            if masked_crc32c(length_bytes) != length_crc:
                return
            (length,) = _LENGTH.unpack(length_bytes)
            data, crc = file.read(length), file.read(_CRC.size)
            if len(data) < length or len(crc) < _CRC.size or masked_crc32c(data) != _CRC.unpack(crc)[0]:
                return
            yield data


def cut_events_after(log_dir: Path, env_step: int) -> None:
    """Drop every event stepped after `env_step` from the event files in `log_dir`; remove the files that keep
    no scalar."""
    for path in sorted(log_dir.glob(EVENT_GLOB)):
        records = [(record, Event.FromString(record)) for record in event_records(path)]
        kept = [(record, event) for record, event in records if event.step <= env_step]
        if not any(event.HasField('summary') for _, event in kept):
            path.unlink()
        elif len(kept) < len(records) or _size([record for record, _ in kept]) < path.stat().st_size:
            _rewrite(path, [record for record, _ in kept])


def _size(records: list[bytes]) -> int:
    return sum(_LENGTH.size + 2 * _CRC.size + len(record) for record in records)


def _rewrite(path: Path, records: list[bytes]) -> None:
    tmp = path.with_name(f'.{path.name}.tmp')
    try:
        with open(tmp, 'wb') as file:
            for record in records:
                length = _LENGTH.pack(len(record))
                file.write(length + _CRC.pack(masked_crc32c(length)) + record + _CRC.pack(masked_crc32c(record)))
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def next_writer_number(log_dir: Path) -> int:
    """A number no event file of the run ends with yet: event files are named by the second they open in, so a
    writer opened within the same second as an earlier one tells its file apart by it."""
    numbers = [int(path.name.rsplit('.', 1)[1]) for path in log_dir.glob(EVENT_GLOB)
               if path.name.rsplit('.', 1)[1].isdigit()]
    return max(numbers, default=-1) + 1
