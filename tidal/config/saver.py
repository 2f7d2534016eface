"""Saving a compiled config as a YAML file that `read_config` + `compile_config` run again as it is."""
from __future__ import annotations

import os
import tempfile
from typing import Mapping, Sequence

from tidal.config.tree import to_plain
from tidal.config.yaml_io import dump_yaml

#: Keys that belong to create_config: what to build, as opposed to how to run it.
CREATE_KEYS = {'env': ('type', 'import_names'), 'env_manager': ('type',), 'policy': ('type', 'import_names')}

_HEADER = 'Resolved tidal config: every key with its value in this run. Run it again with `tidal train`.'


def header_lines(sources: Sequence[str] = (), title: str = _HEADER) -> list[str]:
    """The comment lines above a saved config: `title`, then the layers it was made from, in order."""
    lines = [f'# {title}']
    if sources:
        lines.append("# Made from these layers, each merged over the ones before (and all over the classes' defaults):")
        lines += [f'#   {source}' for source in sources]
    return lines


def split_config(cfg: Mapping) -> tuple[dict, dict]:
    """(main_config, create_config) of a compiled config, as plain data."""
    main = to_plain(cfg)
    create: dict = {}
    for section, keys in CREATE_KEYS.items():
        part = main.get(section, {})
        create[section] = {key: part.pop(key) for key in keys if key in part}
    if not main.get('env_manager'):
        main.pop('env_manager', None)
    return main, create


def save_config(cfg: Mapping, path: str | os.PathLike[str], sources: Sequence[str] = ()) -> None:
    """Writes to a temporary file next to `path` and renames it, so a crash never leaves half a file.
    `sources` (the layers the config was made from) are recorded as comments at the top."""
    main, create = split_config(cfg)
    text = '\n'.join(header_lines(sources)) + '\n' + dump_yaml({'main_config': main, 'create_config': create})
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(prefix=f'.{os.path.basename(path)}.', suffix='.tmp', dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
    except BaseException:
        if os.path.exists(tmp_path):
            os.unlink(tmp_path)
        raise
