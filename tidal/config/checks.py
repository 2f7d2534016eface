"""Merging user values over declared defaults, rejecting keys and types the defaults do not declare.

`schema` is the defaults tree: its keys are the valid keys and its values' types the valid types. A
FreeDict section accepts any keys below it but must itself be a mapping; a key whose default is None
accepts anything. A None is taken where the key's rule says 'or None' (`rules`, by full key path), so that
`null` in YAML and `--set`, and None in Python, can switch a feature off; the rules check the rest later.
"""
from __future__ import annotations

import copy
import difflib
import numbers
from typing import Any, Mapping, Optional

from tidal.config.rules import Rule, none_note
from tidal.config.tree import join_path
from tidal.base.defaults import FreeDict
from tidal.base.errors import ConfigError

_LISTED_KEYS = 12


def is_free(declared: Any) -> bool:
    """Whether any value, with any nested keys, is accepted where `declared` is the default."""
    return declared is None or isinstance(declared, FreeDict)


def merge_checked(schema: Mapping, current: Mapping, update: Mapping, prefix: str = '',
                  from_text: bool = False, rules: Mapping[str, Rule] = {}) -> dict:
    """A copy of `current` with `update` merged in, each key and value checked against `schema`.

    `from_text` marks values typed on the command line: there a string holding a number is accepted
    where a number is declared. `rules` (full key path -> rule) say where a None is taken.
    """
    merged = dict(current)
    for key, value in update.items():
        path = join_path(prefix, key)
        if key not in schema:
            raise ConfigError(unknown_key_message(schema, key, prefix))
        declared = schema[key]
        if isinstance(declared, Mapping) and not isinstance(value, Mapping):
            # a section, declared or free-form: code below it reads keys, so a list there must fail here
            raise ConfigError(_type_message(path, 'a mapping', value))
        if is_free(declared):
            merged[key] = merge_free(merged.get(key), value)
        elif isinstance(declared, Mapping):
            merged[key] = merge_checked(declared, merged.get(key) or {}, value, path, from_text, rules)
        else:
            merged[key] = checked_value(declared, value, path, from_text, rules.get(path))
    return merged


def merge_free(current: Any, value: Any) -> Any:
    """Merge without checks, recursing where both sides are mappings."""
    if isinstance(current, Mapping) and isinstance(value, Mapping):
        merged = dict(current)
        for key, item in value.items():
            merged[key] = merge_free(merged.get(key), item)
        return merged
    return copy.deepcopy(value)


def checked_value(declared: Any, value: Any, path: str, from_text: bool = False,
                  rule: Optional[Rule] = None) -> Any:
    """`value` in the type of `declared` (int widened to float, tuple to list), None or another type where `rule`
    (the key's, if any) takes it, or a ConfigError."""
    if value is None and rule is not None and rule.allows_none:
        return None
    if from_text and isinstance(value, str):
        value = _number_from_text(declared, value)
    if isinstance(declared, bool):
        if isinstance(value, bool):
            return value
        expected = 'bool'
    elif isinstance(declared, numbers.Integral):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        expected = 'int'
    elif isinstance(declared, numbers.Real):
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            return float(value)
        expected = 'float'
    elif isinstance(declared, str):
        if isinstance(value, str):
            return value
        expected = 'str'
    elif isinstance(declared, (list, tuple)):
        if isinstance(value, (list, tuple)):
            return copy.deepcopy(list(value))
        expected = 'a list'
    elif isinstance(value, type(declared)):
        return copy.deepcopy(value)
    else:
        expected = type(declared).__name__
    if rule is not None and any(alt.kind != 'None' and alt.fits_type(value) for alt in rule.alternatives):
        return copy.deepcopy(value)  # another type the key's rule takes (a bool beside names: learn.compile)
    note = none_note(value, rule)
    if note and rule is not None:  # None is the point: the whole rule says whether the key takes it
        expected = rule.text
    raise ConfigError(_type_message(path, expected, value) + note)


def unknown_key_message(schema: Mapping, key: Any, prefix: str) -> str:
    """Names the full path of an undeclared key and the closest declared ones."""
    path = join_path(prefix, key)
    siblings = [str(name) for name in schema]
    close = difflib.get_close_matches(str(key), siblings, n=3, cutoff=0.6)
    suggestions = [join_path(prefix, name) for name in close] or _same_name_below(schema, str(key), prefix)
    if suggestions:
        return f"unknown config key '{path}'; did you mean {' or '.join(repr(s) for s in suggestions)}?"
    where = f"under '{prefix}'" if prefix else 'at the top level'
    listed = ', '.join(sorted(siblings)[:_LISTED_KEYS]) + (', ...' if len(siblings) > _LISTED_KEYS else '')
    return f"unknown config key '{path}'; valid keys {where}: {listed or 'none'}"


def _same_name_below(schema: Mapping, key: str, prefix: str) -> list[str]:
    """Paths deeper in `schema` that end in `key`: the user probably nested it at the wrong level."""
    found = []
    for name, declared in schema.items():
        if isinstance(declared, Mapping) and not is_free(declared):
            section = join_path(prefix, name)
            if key in declared:
                found.append(join_path(section, key))
            found.extend(_same_name_below(declared, key, section))
    return found[:3]


def _number_from_text(declared: Any, text: str) -> Any:
    if isinstance(declared, bool) or not isinstance(declared, numbers.Real):
        return text
    digits = text.strip().replace('_', '')
    if isinstance(declared, numbers.Integral):
        try:
            return int(digits)
        except ValueError:
            pass
    try:
        number = float(digits)
    except ValueError:
        return text
    if isinstance(declared, numbers.Integral):
        return int(number) if number.is_integer() else text  # '1e6' for an int key
    return number


def _type_message(path: str, expected: str, value: Any) -> str:
    got = 'None' if value is None else f'{type(value).__name__} ({value!r})'
    return f"config key '{path}' must be {expected}, got {got}"
