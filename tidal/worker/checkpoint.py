"""Checkpoint files, written atomically so a crash mid-write never leaves a broken file behind."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from tidal.errors import CheckpointError


def save_checkpoint(state: dict[str, Any], path: str | os.PathLike) -> Path:
    """Write `state` to `path` through a temporary file and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f'.{path.name}.tmp')
    torch.save(state, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = 'cpu') -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint '{path}' not found")
    try:
        return torch.load(path, map_location=map_location, weights_only=False)
    except Exception as err:  # a truncated or foreign file: say which one
        raise CheckpointError(f"checkpoint '{path}' cannot be read: {err}") from err


def policy_state(checkpoint: dict[str, Any], path: str | os.PathLike) -> dict[str, Any]:
    """The policy part of a run checkpoint (or of a bare policy state dict)."""
    state = checkpoint.get('policy', checkpoint)
    if 'model' not in state:
        raise CheckpointError(f"checkpoint '{path}' holds no policy weights (no 'model' entry)")
    return state
