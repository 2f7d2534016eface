"""Reading a W&B offline run back: the records of its `run-<id>.wandb` file (W&B's transaction log).

The file is a log of 32 KiB blocks after a 7-byte header; each chunk has a 7-byte header (checksum, length, kind:
1 whole, 2 first, 3 middle, 4 last) and a record's chunks join into one protobuf `Record`.
"""
from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any, Iterator

from wandb.proto import wandb_internal_pb2

BLOCK, HEADER = 32768, 7


def records(path: Path) -> Iterator[Any]:
    data, position, parts = path.read_bytes(), HEADER, b''
    while position + HEADER <= len(data):
        left = BLOCK - position % BLOCK
        _, length, kind = struct.unpack('<IHB', data[position:position + HEADER]) if left >= HEADER else (0, 0, 0)
        if kind == 0:  # the zeros that pad a block's end
            position += left
            continue
        parts += data[position + HEADER:position + HEADER + length]
        position += HEADER + length
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            parts = b''
            yield record


def offline_run(folder: Path) -> dict[str, Any]:
    """What an offline run folder holds: id, name, group, config, history rows, summary and saved files."""
    run: dict[str, Any] = {'config': {}, 'history': [], 'summary': {}, 'files': []}
    for record in records(next(folder.glob('run-*.wandb'))):
        kind = record.WhichOneof('record_type')
        if kind == 'run':
            run.update(id=record.run.run_id, name=record.run.display_name, group=record.run.run_group)
            run['config'].update({item.key: json.loads(item.value_json) for item in record.run.config.update})
        elif kind == 'config':
            run['config'].update({item.key: json.loads(item.value_json) for item in record.config.update})
        elif kind == 'history':
            run['history'].append({'/'.join(item.nested_key) or item.key: json.loads(item.value_json)
                                   for item in record.history.item})
        elif kind == 'summary':
            run['summary'].update({'/'.join(item.nested_key) or item.key: json.loads(item.value_json)
                                   for item in record.summary.update})
        elif kind == 'files':
            run['files'] += [file.path for file in record.files.files]
    return run
