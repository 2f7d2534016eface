"""A compiled config as commented YAML, for `tidal config show`."""
from __future__ import annotations

from typing import Mapping, Optional

from tidal.config.tree import join_path, to_plain
from tidal.config.yaml_io import format_scalar

_INDENT = '  '


def format_config(cfg: Mapping, comments: Optional[Mapping[str, str]] = None) -> str:
    """Block YAML with each key's comment on the lines above it; valid YAML as it is."""
    lines: list[str] = []
    _emit(to_plain(cfg), '', 0, comments or {}, lines)
    return '\n'.join(lines) + '\n'


def _emit(node: Mapping, prefix: str, depth: int, comments: Mapping[str, str], lines: list[str]) -> None:
    indent = _INDENT * depth
    for key, value in node.items():
        path = join_path(prefix, key)
        is_section = isinstance(value, Mapping) and bool(value)
        if depth == 0 and is_section and lines:
            lines.append('')  # a blank line before each top-level section
        lines.extend(f'{indent}# {text}'.rstrip() for text in comments.get(path, '').splitlines())
        if is_section:
            lines.append(f'{indent}{format_scalar(key)}:')
            _emit(value, path, depth + 1, comments, lines)
        else:
            lines.append(f'{indent}{format_scalar(key)}: {format_scalar(value)}')
