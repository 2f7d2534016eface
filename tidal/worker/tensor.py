"""Moving env data (numpy arrays, possibly nested in dicts) to and from torch."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import torch


def tree_map(fn: Callable[[Any], Any], tree: Any) -> Any:
    """Apply `fn` to every leaf of a nest of dicts."""
    if isinstance(tree, dict):
        return {key: tree_map(fn, value) for key, value in tree.items()}
    return fn(tree)


def to_tensor(tree: Any, device: torch.device) -> Any:
    """numpy leaves -> tensors on `device` (shares memory on CPU when the dtype allows)."""
    return tree_map(lambda x: torch.as_tensor(x, device=device), tree)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def concat(trees: list[Any]) -> Any:
    """Concatenate a list of same-structured nests along the leading dim."""
    first = trees[0]
    if isinstance(first, dict):
        return {key: concat([tree[key] for tree in trees]) for key in first}
    return first if len(trees) == 1 else torch.cat(trees, dim=0)
