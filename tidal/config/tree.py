"""Small helpers for nested config trees: dotted paths (the one getter, `value_at`) and conversion to plain
Python values."""
from __future__ import annotations

import copy
import numbers
from typing import Any, Mapping, Sequence, Union

from tidal.base.errors import ConfigError


def join_path(prefix: str, key: Any) -> str:
    """The dotted path of `key` inside the section at `prefix` ('' is the top level)."""
    return f'{prefix}.{key}' if prefix else str(key)


#: A `default` for `value_at` that tells a missing key from one set to None.
MISSING: Any = object()


def value_at(tree: Any, path: Union[str, Sequence[str]], default: Any = None) -> Any:
    """The value at a dotted path ('policy.learn.batch_size') or a sequence of keys; `default` when any step is
    missing or not a mapping."""
    node = tree
    for key in path.split('.') if isinstance(path, str) else path:
        if not isinstance(node, Mapping) or key not in node:
            return default
        node = node[key]
    return node


def as_dicts(value: Any) -> Any:
    """A deep copy in which every mapping (EasyDict, FreeDict, ...) is a plain dict."""
    if isinstance(value, Mapping):
        return {key: as_dicts(item) for key, item in _items(value)}
    if isinstance(value, (list, tuple)):
        items = [as_dicts(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return copy.deepcopy(value)


def to_plain(value: Any, path: str = '') -> Any:
    """Dicts, lists, str, int, float, bool and None only, so the tree saves to YAML and compares equal
    after a round trip (tuples become lists, numpy scalars become Python numbers)."""
    if isinstance(value, Mapping):
        return {key: to_plain(item, join_path(path, key)) for key, item in _items(value)}
    if isinstance(value, (list, tuple)):
        return [to_plain(item, f'{path}[{index}]') for index, item in enumerate(value)]
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value).__name__ == 'bool_':  # numpy's bool is no bool subclass
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise ConfigError(f"config key '{path}' holds a {type(value).__name__} ({value!r}); a config holds only "
                      f"dicts, lists, strings, numbers, booleans and None, so that it saves as YAML")


def shadowed_keys(tree: Any, prefix: str = '') -> list[str]:
    """Paths of keys an EasyDict would turn into attributes hiding dict methods (`items`, `get`, ...)."""
    found: list[str] = []
    if isinstance(tree, Mapping):
        for key, item in _items(tree):
            path = join_path(prefix, key)
            if isinstance(key, str) and hasattr(dict, key):
                found.append(path)
            found += shadowed_keys(item, path)
    elif isinstance(tree, (list, tuple)):
        for index, item in enumerate(tree):
            found += shadowed_keys(item, f'{prefix}[{index}]')
    return found


def _items(mapping: Mapping) -> Any:
    """Items even of an EasyDict whose key 'items' hides the method."""
    return dict.items(mapping) if isinstance(mapping, dict) else mapping.items()
