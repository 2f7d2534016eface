"""DI-engine's import names in a user's files, served by tidal's equivalents while tidal imports those files.

A DI-engine zoo config imports `ding.entry` for its `__main__` tail; a policy file written for DI-engine
subclasses `ding.policy.SACPolicy` and registers it with `ding.utils.POLICY_REGISTRY`. tidal's classes of those
names are the same algorithms under the same registered names, and its registries take the same
`@REGISTRY.register('name')`; so while tidal runs a config file or imports a module (`import_names`, `--import`)
without DI-engine installed, these names (`SERVED`) import tidal's. Any other `ding` name fails in one line that
says what to import from tidal instead. With DI-engine installed nothing is served: its own modules import.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from typing import Any, Callable, Iterator, Optional, Sequence

from tidal.base.errors import ConfigError, TidalError
from tidal.registry import MODEL_REGISTRY, POLICY_REGISTRY, import_names

#: DI-engine's entry points that its zoo configs import at the top, for their `__main__` tail.
DING_ENTRY_POINTS = ('serial_pipeline', 'serial_pipeline_onpolicy', 'serial_pipeline_sqil')
#: DI-engine's policy classes -> the name DI-engine and tidal both register their class under.
DING_POLICIES = {'SACPolicy': 'sac', 'DiscreteSACPolicy': 'discrete_sac', 'SQILSACPolicy': 'sqil_sac',
                 'PPOPolicy': 'ppo', 'PPGPolicy': 'ppg'}
_REGISTRIES = {'POLICY_REGISTRY': POLICY_REGISTRY, 'MODEL_REGISTRY': MODEL_REGISTRY}
#: DI-engine's modules that tidal serves -> their names it serves.
SERVED: dict[str, tuple[str, ...]] = {
    'ding': (),
    'ding.entry': DING_ENTRY_POINTS,
    'ding.policy': tuple(DING_POLICIES),
    'ding.policy.sac': ('SACPolicy', 'DiscreteSACPolicy', 'SQILSACPolicy'),
    'ding.policy.ppo': ('PPOPolicy',),
    'ding.policy.ppg': ('PPGPolicy',),
    'ding.utils': tuple(_REGISTRIES),
}
#: DI-engine package -> what to import from tidal instead of its other names.
_INSTEAD = {
    'ding.entry': 'from tidal import serial_pipeline (or serial_pipeline_onpolicy, serial_pipeline_sqil)',
    'ding.policy': 'tidal.policies (`tidal list policies`)',
    'ding.utils': 'from tidal import POLICY_REGISTRY, MODEL_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY',
    'ding.model': 'tidal.models, registered in tidal.MODEL_REGISTRY (`tidal list models`)',
    'ding.envs': 'tidal.envs, registered in tidal.ENV_REGISTRY (`tidal list envs`)',
}
_ANY_INSTEAD = 'tidal, tidal.policies and tidal.models (`tidal list`)'


class DingImportError(TidalError, ImportError):
    """A DI-engine name that tidal does not serve; an ImportError too, so that a user's
    `try: ... except ImportError:` around a DI-engine import still falls back."""


def _refusal(module: str, name: Optional[str] = None) -> DingImportError:
    """The one-line error for a DI-engine module, or a name in one, that tidal does not serve."""
    instead = _INSTEAD.get('.'.join(module.split('.')[:2]), _ANY_INSTEAD)
    if name is not None and SERVED.get(module):
        what, served = f"'{name}' from DI-engine's {module}", f"its {', '.join(SERVED[module])}"
    else:
        what = f"DI-engine's module {module}" if name is None else f"'{name}' from DI-engine's {module}"
        served = ', '.join(package for package in SERVED if package.count('.') == 1)
    return DingImportError(f"cannot import {what}: tidal has only {served} (tidal's own, under DI-engine's "
                           f"names); import from tidal instead: {instead}")


def _attribute(module: str, name: str) -> Any:
    """The module `__getattr__` (PEP 562) of a stand-in: tidal's equivalent of `module.name`."""
    if name.startswith('_'):
        raise AttributeError(f"module '{module}' has no attribute '{name}'")
    if f'{module}.{name}' in SERVED:
        return importlib.import_module(f'{module}.{name}')
    if name not in SERVED[module]:
        raise _refusal(module, name)
    if name in DING_POLICIES:
        import_names(['tidal.policies'])
        return POLICY_REGISTRY.get(DING_POLICIES[name])
    if name in _REGISTRIES:
        return _REGISTRIES[name]
    return _entry_point(name)


def _entry_point(name: str) -> Callable[..., None]:
    def stand_in(*args: Any, **kwargs: Any) -> None:
        raise ConfigError(f"ding.entry.{name} is DI-engine's; tidal runs this config with "
                          f"`tidal train FILE` or `tidal -m serial -c FILE -s SEED`")
    stand_in.__name__ = name
    return stand_in


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """While installed, finds `ding` and its modules: a stand-in for those of SERVED, the refusal for others."""

    def __init__(self) -> None:
        self.served: set[str] = set()  # the stand-ins in sys.modules, which leave it with the outermost block

    def find_spec(self, fullname: str, path: Optional[Sequence[str]],
                  target: Optional[types.ModuleType] = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname.split('.')[0] != 'ding':
            return None
        if fullname not in SERVED:
            raise _refusal(fullname)
        return importlib.util.spec_from_loader(fullname, self, is_package=True)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[types.ModuleType]:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        name = module.__name__
        vars(module).update(__all__=list(SERVED[name]), __getattr__=lambda attribute: _attribute(name, attribute))
        self.served.add(name)


_FINDER = _StandIns()
_LOCK = threading.RLock()
_depth = 0  # ding_stand_ins blocks entered and not left; the outermost installs and removes the finder


@contextlib.contextmanager
def ding_stand_ins() -> Iterator[None]:
    """Serve DI-engine's names of SERVED to what the block imports, unless DI-engine itself is installed; the
    stand-ins leave sys.modules with the outermost block."""
    global _depth
    with _LOCK:
        if _depth == 0 and 'ding' not in sys.modules and not _ding_installed(tuple(sys.path)):
            sys.meta_path.insert(0, _FINDER)
        _depth += 1
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0 and _FINDER in sys.meta_path:
                sys.meta_path.remove(_FINDER)
                for name in _FINDER.served:
                    module = sys.modules.get(name)
                    if getattr(getattr(module, '__spec__', None), 'loader', None) is _FINDER:
                        del sys.modules[name]
                _FINDER.served.clear()


@functools.lru_cache(maxsize=8)
def _ding_installed(import_path: tuple[str, ...]) -> bool:
    """Whether DI-engine itself can be imported from `import_path` (sys.path): a search of every folder on it,
    made once per import path."""
    return importlib.util.find_spec('ding') is not None
