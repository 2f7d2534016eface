"""Reading a config's `main_config` / `create_config` from a .py, .yaml/.yml or .json file, or the zoo.

A file may name a `base` (a zoo config, or a file relative to its folder) that its own keys are merged
over; so each file read gives a list of layers, its deepest base first (see `merge_layers`).
"""
from __future__ import annotations

import codecs
import copy
import difflib
import hashlib
import json
import os
import re
import sys
import types
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import yaml

from tidal.config.ding import DingImportError, ding_stand_ins
from tidal.config.tree import as_dicts
from tidal.config.yaml_io import load_yaml
from tidal.base.errors import ConfigError, TidalError, one_line

ZOO_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'zoo')
_ENTRIES = ('main_config', 'create_config')
#: The key naming the config a file's keys are merged over; never a key of main_config.
BASE_KEY = 'base'


@dataclass(frozen=True)
class Layer:
    """The keys one config file sets itself (its bases are layers of their own), and how messages name it."""

    source: str  # in messages: "config file 'my.yaml'" or "zoo config 'pendulum_sac'"
    recorded: str  # in a run's record, true from any folder: "config file '/home/me/my.yaml'"
    main: dict
    create: dict


def read_config(path: str) -> tuple[dict, dict]:
    """(main_config, create_config) of a config file merged over its bases, as plain dicts."""
    return merge_layers(read_layers(path))


def read_layers(path: str, partial: bool = False, source: Optional[str] = None) -> list[Layer]:
    """The file's bases, deepest first, then the file. A file with a `base`, or read with `partial` (a
    `--config` file), may set only some keys; any other file is a whole config with both entries."""
    layers: list[Layer] = []
    _read_chain(path, source or f"config file '{path}'", partial, layers, [])
    return layers


def merge_layers(layers: Sequence[Layer]) -> tuple[dict, dict]:
    """(main_config, create_config) of the layers, each over the ones before: mappings merge key by key,
    other values (lists too) replace, except `import_names` lists, which add up as they do in compile_config."""
    main: dict = {}
    create: dict = {}
    for layer in layers:
        main = _merged(main, layer.main)
        create = _merged(create, layer.create)
    return main, create


def _merged(current: dict, update: Mapping) -> dict:
    merged = dict(current)
    for key, value in update.items():
        old = merged.get(key)
        if isinstance(old, Mapping) and isinstance(value, Mapping):
            merged[key] = _merged(dict(old), value)
        elif key == 'import_names' and isinstance(old, list) and isinstance(value, list):
            merged[key] = old + [name for name in value if name not in old]
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def _read_chain(path: str, source: str, partial: bool, layers: list[Layer], above: list[tuple[str, str]]) -> None:
    """Appends the layers of `path`'s bases, then its own; `above` holds (real path, path) of the files
    whose base chain led here."""
    real = os.path.realpath(path)
    reals = [name for name, _ in above]
    if real in reals:
        cycle = ' -> '.join(repr(shown) for _, shown in above[reals.index(real):])
        raise ConfigError(f"config bases form a cycle: {cycle} -> '{path}'")
    base, main, create = _read_entries(path, partial)
    if base is not None:
        base_path, base_source = _resolve_base(base, path, source)
        _read_chain(base_path, base_source, True, layers, [*above, (real, path)])
    layers.append(Layer(source, _recorded_name(path), main, create))


def _recorded_name(path: str) -> str:
    """A zoo config by its name, any other file by its absolute path."""
    folder, file_name = os.path.split(os.path.abspath(path))
    if folder == os.path.abspath(ZOO_DIR):
        return f"zoo config '{os.path.splitext(file_name)[0]}'"
    return f"config file '{os.path.abspath(path)}'"


def _resolve_base(base: str, path: str, source: str) -> tuple[str, str]:
    """The file `base` names, relative to the folder of `path`, else the zoo config of that name."""
    candidate = os.path.normpath(os.path.join(os.path.dirname(path), os.path.expanduser(base)))
    if os.path.isfile(candidate):
        return candidate, f"config file '{candidate}'"
    names = zoo_names()
    name = base[:-3] if base.endswith('.py') else base
    if name in names:
        return os.path.join(ZOO_DIR, f'{name}.py'), f"zoo config '{name}'"
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ''
    raise ConfigError(f"{source} has base '{base}', which is neither a file (relative to its folder) nor a "
                      f"zoo config{hint}")


def _read_entries(path: str, partial: bool) -> tuple[Optional[str], dict, dict]:
    """(base, main_config, create_config) as the file writes them. A partial file may leave out either
    entry, or hold main_config's keys at its top level: unambiguous, since main_config has no key named
    `main_config`, `create_config` or `base`."""
    if os.path.isdir(path):
        raise ConfigError(f"config path '{path}' is a folder; name the config file inside it")
    if not os.path.isfile(path):
        raise ConfigError(f"config file '{path}' not found")
    extension = os.path.splitext(path)[1].lower()
    _put_folder_on_import_path(path)
    if extension == '.py':
        entries = _run_python(path)
    elif extension in ('.yaml', '.yml'):
        entries = _load_yaml(path)
    elif extension == '.json':
        entries = _load_json(path)
    else:
        raise ConfigError(f"config file '{path}' has an unknown extension '{extension}'; "
                          f"use .py, .yaml, .yml or .json")
    if not isinstance(entries, dict):
        raise ConfigError(f"config file '{path}' must hold a mapping with 'main_config' and "
                          f"'create_config', got {type(entries).__name__}")
    base = entries.get(BASE_KEY)
    if base is not None and (not isinstance(base, str) or not base.strip()):
        raise ConfigError(f"'{BASE_KEY}' in config file '{path}' must name a zoo config or a config file, "
                          f"got {type(base).__name__} ({base!r})")
    if base is None and not partial:
        main_config, create_config = (_entry(entries, name, path) for name in _ENTRIES)
        return None, main_config, create_config
    own_keys = [key for key in entries if key != BASE_KEY]
    if not any(name in entries for name in _ENTRIES):
        return base, as_dicts({key: entries[key] for key in own_keys}), {}  # main_config's keys alone
    stray = [key for key in own_keys if key not in _ENTRIES]
    if stray:
        raise ConfigError(f"config file '{path}' has '{stray[0]}' beside main_config/create_config; "
                          f"put it under main_config")
    main_config, create_config = (_entry(entries, name, path) if name in entries else {} for name in _ENTRIES)
    return base, main_config, create_config


def _put_folder_on_import_path(path: str) -> None:
    """Append the config file's folder to sys.path, so that its `import_names` (and its own imports) find
    modules that lie beside it, as a script finds its neighbours."""
    folder = os.path.dirname(os.path.abspath(path))
    if folder != ZOO_DIR and folder not in sys.path:
        sys.path.append(folder)


def zoo_names() -> list[str]:
    """Names of the ready configs in tidal/config/zoo, e.g. 'pendulum_sac'."""
    if not os.path.isdir(ZOO_DIR):
        return []
    return sorted(name[:-3] for name in os.listdir(ZOO_DIR)
                  if name.endswith('.py') and not name.startswith('_'))


def resolve_config_source(name_or_path: str) -> tuple[dict, dict]:
    """A config path if the file exists, else the zoo config of that name; merged over its bases."""
    return merge_layers(config_layers(name_or_path))


def config_layers(name_or_path: str) -> list[Layer]:
    """The layers of a config path if the file exists, else of the zoo config of that name."""
    names = zoo_names()
    looks_like_path = os.sep in name_or_path or name_or_path.endswith(('.yaml', '.yml', '.json'))
    # a run folder named after a zoo config (the default exp_name) must not hide that config
    shadowed = os.path.isdir(name_or_path) and name_or_path in names
    if (os.path.exists(name_or_path) and not shadowed) or (looks_like_path and name_or_path not in names):
        return read_layers(name_or_path)  # a missing file is reported as such
    name = name_or_path[:-3] if name_or_path.endswith('.py') else name_or_path
    if name in names:
        return read_layers(os.path.join(ZOO_DIR, f'{name}.py'), source=f"zoo config '{name}'")
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
            else f"zoo configs: {', '.join(names) or 'none'}")
    raise ConfigError(f"no config file or zoo config named '{name_or_path}'; {hint}")


def _entry(entries: dict, name: str, path: str) -> dict:
    if name not in entries:
        what = 'the env, env_manager and policy types' if name == 'create_config' else 'the run settings'
        raise ConfigError(f"config file '{path}' defines no '{name}' ({what})")
    value = entries[name]
    if not isinstance(value, dict):
        raise ConfigError(f"'{name}' in config file '{path}' must be a mapping, got {type(value).__name__}")
    return as_dicts(value)


def _run_python(path: str) -> dict[str, Any]:
    """Executes the file as a module; it stays in sys.modules so that classes it defines
    (a user's own policy, say) can be inspected and pickled. It runs under its own name, never as
    `__main__`, so the `if __name__ == '__main__':` tail of a DI-engine zoo config is skipped."""
    source = _read_text(path)
    digest = hashlib.sha1(os.path.abspath(path).encode()).hexdigest()[:8]
    stem = re.sub(r'\W', '_', os.path.splitext(os.path.basename(path))[0])
    module = types.ModuleType(f'tidal_user_config_{stem}_{digest}')
    module.__file__ = os.path.abspath(path)
    sys.modules[module.__name__] = module
    try:
        with ding_stand_ins():  # `from ding.entry import serial_pipeline` at the top of DI-engine's zoo configs
            exec(compile(source, path, 'exec'), module.__dict__)
    except SyntaxError as err:
        sys.modules.pop(module.__name__, None)
        raise ConfigError(f"syntax error in config file '{path}' at line {err.lineno}: {err.msg}") from err
    except DingImportError as err:
        sys.modules.pop(module.__name__, None)
        raise ConfigError(f"config file '{path}' failed to run: {err}") from err
    except TidalError:
        sys.modules.pop(module.__name__, None)
        raise
    except Exception as err:
        sys.modules.pop(module.__name__, None)
        raise ConfigError(f"config file '{path}' failed to run: {type(err).__name__}: "
                          f"{one_line(err)}") from err
    return {name: module.__dict__[name] for name in (*_ENTRIES, BASE_KEY) if name in module.__dict__}


def _load_yaml(path: str) -> Any:
    text = _read_text(path)
    try:
        return load_yaml(text)
    except yaml.YAMLError as err:
        mark = getattr(err, 'problem_mark', None) or getattr(err, 'context_mark', None)
        where = f' at line {mark.line + 1}' if mark is not None else ''
        problem = getattr(err, 'problem', None) or str(err)
        raise ConfigError(f"invalid YAML in config file '{path}'{where}: {one_line(problem)}") from err


def _load_json(path: str) -> Any:
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"invalid JSON in config file '{path}' at line {err.lineno}: {err.msg}") from err


def _read_text(path: str) -> str:
    """The file's text, decoded as UTF-8 (a leading byte-order mark is dropped)."""
    try:
        with open(path, 'rb') as file:
            data = file.read()
    except OSError as err:
        raise ConfigError(f"config file '{path}' cannot be read: {err.strerror or one_line(err)}") from err
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[start:].decode('utf-8')
    except UnicodeDecodeError as err:
        offset = start + err.start
        raise ConfigError(f"config file '{path}' is not UTF-8 text: byte 0x{data[offset]:02x} at byte "
                          f"offset {offset} cannot be decoded") from err
