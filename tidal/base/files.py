"""Small files written whole or not at all: a reader (a resume, a kill mid-write) sees the old text or the new."""
from __future__ import annotations

import os
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` to a hidden sibling, then rename it over `path`."""
    tmp = path.with_name(f'.{path.name}.tmp')
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # gone after the rename; left only by a failed write
