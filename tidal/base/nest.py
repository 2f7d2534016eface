"""Nests: dicts (and lists / tuples) of tensors or arrays, walked in one place.

Env observations, transitions, replay columns and state dicts are all nests; every part of tidal
maps, flattens, joins and moves them with these functions instead of a walker of its own.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import numpy as np
import torch

KeyPath = tuple  # the keys (and list indices) from the root of a nest to one leaf


def tree_map(fn: Callable[[Any], Any], tree: Any, sequences: bool = False) -> Any:
    """Apply `fn` to every leaf of a nest of dicts (and of lists and tuples when `sequences`); dicts come
    back as plain dicts."""
    if isinstance(tree, dict):
        return {key: tree_map(fn, value, sequences) for key, value in tree.items()}
    if sequences and type(tree) in (list, tuple):
        items = [tree_map(fn, value, sequences) for value in tree]
        return items if isinstance(tree, list) else tuple(items)
    return fn(tree)


def tree_zip_map(fn: Callable[[list[Any]], Any], trees: Sequence[Any], sequences: bool = False) -> Any:
    """Apply `fn` to the list of same-place leaves of nests that share the structure of the first (lists and
    tuples walked too when `sequences`)."""
    first = trees[0]
    if isinstance(first, dict):
        return {key: tree_zip_map(fn, [tree[key] for tree in trees], sequences) for key in first}
    if sequences and type(first) in (list, tuple):
        items = [tree_zip_map(fn, [tree[index] for tree in trees], sequences) for index in range(len(first))]
        return items if isinstance(first, list) else tuple(items)
    return fn(list(trees))


def tree_leaves(tree: Any, sequences: bool = False, prefix: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """(key path, leaf) of every leaf, depth first in insertion order."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from tree_leaves(value, sequences, (*prefix, key))
    elif sequences and isinstance(tree, (list, tuple)):
        for index, value in enumerate(tree):
            yield from tree_leaves(value, sequences, (*prefix, index))
    else:
        yield prefix, tree


def tree_replace(tree: Any, leaves: dict[KeyPath, Any], prefix: KeyPath = ()) -> Any:
    """`tree` with the tensor at each key path of `leaves` replaced (lists and tuples walked too)."""
    if isinstance(tree, torch.Tensor):
        return leaves[prefix]
    if isinstance(tree, dict):
        return {key: tree_replace(value, leaves, (*prefix, key)) for key, value in tree.items()}
    if isinstance(tree, (list, tuple)):
        items = [tree_replace(value, leaves, (*prefix, index)) for index, value in enumerate(tree)]
        return items if isinstance(tree, list) else tuple(items)
    return tree


def path_name(path: KeyPath) -> str:
    """`policy.optimizer_q.state[0].exp_avg`: names joined by dots, other keys in brackets."""
    text = ''
    for key in path:
        text += f'.{key}' if isinstance(key, str) else f'[{key!r}]'
    return text.lstrip('.') or '<root>'


def first_leaf(tree: Any) -> Any:
    while isinstance(tree, dict):
        tree = next(iter(tree.values()))
    return tree


def leading_dim(tree: Any) -> int:
    """The leading (env, sample or row) dimension of a nest's leaves."""
    return int(first_leaf(tree).shape[0])


def take_rows(tree: Any, index: torch.Tensor) -> Any:
    """The rows `index` of every leaf, in that order."""
    return tree_map(lambda column: column.index_select(0, index.to(column.device)), tree)


def concat(trees: list[Any]) -> Any:
    """Concatenate same-structured nests along the leading dim."""
    return tree_zip_map(lambda leaves: leaves[0] if len(leaves) == 1 else torch.cat(leaves, dim=0), trees)


def to_tensor(tree: Any, device: torch.device) -> Any:
    """numpy leaves -> tensors on `device` (shares memory on CPU when the dtype allows)."""
    return tree_map(lambda x: torch.as_tensor(x, device=device), tree)


def to_numpy(tensor: torch.Tensor) -> np.ndarray:
    return tensor.detach().cpu().numpy()


def to_cpu(tree: Any) -> Any:
    """Every tensor of a nest (lists and tuples too) detached and on the CPU; other leaves as they are."""
    return tree_map(lambda leaf: leaf.detach().cpu() if isinstance(leaf, torch.Tensor) else leaf, tree,
                    sequences=True)


def shape_tuple(shape: int | Sequence[int]) -> tuple[int, ...]:
    """A config's shape (n or [n, ...]) as a tuple."""
    return (int(shape), ) if isinstance(shape, int) else tuple(int(size) for size in shape)
