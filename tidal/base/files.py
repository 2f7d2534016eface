"""Small files written whole or not at all (a reader, a resume, a kill mid-write sees the old text or the new), and
lock files that let processes take turns."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to a hidden sibling, then rename it over `path`."""
    tmp = path.with_name(f'.{path.name}.tmp')
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failed write


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made if missing) for the block: the processes that take it run the block
    one at a time (POSIX `flock`; the lock goes with the process if it dies)."""
    import fcntl
    with open(path, 'a+') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
