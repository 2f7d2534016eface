"""DI-engine compatibility is a wing of its own: the config core reaches it only through its package's names, from
the compiler (translate a config), the loader (serve DI-engine's import names) and the package's setup."""
from __future__ import annotations

import ast
from pathlib import Path

import tidal.config

CONFIG_DIR = Path(tidal.config.__file__).parent


def _ding_imports(path: Path) -> set[str]:
    """The modules of DI-engine compatibility that the file at `path` imports (`from tidal.config import ding` is
    its package)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding='utf-8'))):
        if isinstance(node, ast.ImportFrom) and node.module == 'tidal.config':
            found |= {f'tidal.config.{alias.name}' for alias in node.names if alias.name == 'ding'}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} if node.module.startswith('tidal.config.ding') else set()
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name.startswith('tidal.config.ding')}
    return found


def test_config_core_imports_ding_compatibility_only_through_its_package():
    users = {path.stem: _ding_imports(path) for path in sorted(CONFIG_DIR.glob('*.py')) if _ding_imports(path)}
    assert users == {'__init__': {'tidal.config.ding'}, 'compiler': {'tidal.config.ding'},
                     'loader': {'tidal.config.ding'}}
