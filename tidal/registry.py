"""Name -> class registries, so configs can refer to policies, models and envs by name."""
from __future__ import annotations

import contextlib
import difflib
import importlib
import importlib.util
import os
import sys
from typing import Any, Callable, ContextManager, Iterable, Mapping, Optional, TypeVar

from tidal.base.errors import TidalError, UnknownNameError, one_line

T = TypeVar('T')

#: Entered around every `import_names`: tidal.config sets it to serve DI-engine's names (`ding.policy`, ...) to
#: the modules users wrote for DI-engine (this layer imports none above it).
_import_scope: Callable[[], ContextManager[Any]] = contextlib.nullcontext


def set_import_scope(scope: Callable[[], ContextManager[Any]]) -> None:
    """Install the context that `import_names` enters around its imports."""
    global _import_scope
    _import_scope = scope


def import_names(modules: Iterable[str], source: str = 'import_names') -> None:
    """Import modules so that the classes they register become available by name.

    Each entry is a module name (`my_package.my_policy`) or the path of a Python file (`./my_policy.py`,
    `sub/my_policy.py`). A file is imported as the module named after it (`my_policy`), with its folder
    put on the import path so that it can import its neighbours. `source` names where the entries came
    from (`import_names`, `--import`) in the one-line error that a missing or failing module gives.
    """
    with _import_scope():
        for module in modules or ():
            if not isinstance(module, str) or not module:
                raise TidalError(f"{source} entries must be module names or .py file paths, got {module!r}")
            if _is_file_path(module):
                _import_file(module, source)
            else:
                _import_module(module, source)


def module_name(entry: str) -> str:
    """The name of the module an `import_names` entry is imported as: a file's stem (`./my_policy.py` ->
    'my_policy'), else the entry itself."""
    return os.path.splitext(os.path.basename(entry))[0] if _is_file_path(entry) else entry


def _is_file_path(entry: str) -> bool:
    return entry.endswith('.py') or '/' in entry or os.sep in entry


def _import_module(name: str, source: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError as err:
        hint = ''
        if isinstance(err, ModuleNotFoundError) and err.name == name.split('.')[0]:
            hint = (f"; run tidal from the folder that holds it, or give its file with --import "
                    f"PATH/{name.replace('.', '/')}.py")
        raise TidalError(f"cannot import module '{name}' named in {source}: {one_line(err)}{hint}") from err
    except Exception as err:
        raise TidalError(f"module '{name}' named in {source} failed to import: {_import_failure(err)}") from err


def _import_file(path: str, source: str) -> None:
    """Import the file `path` as the module named after it, once (a second call finds it imported)."""
    file = os.path.abspath(path)
    stem = module_name(file)
    if not os.path.isfile(file):
        if os.path.isdir(file):
            raise TidalError(f"cannot import '{path}' named in {source}: file is a folder; name a .py file")
        if stem in sys.modules:
            return  # a run's saved entry, its module given again with --import from another folder
        raise TidalError(f"cannot import '{path}' named in {source}: file not found"
                         + ("; run tidal from the folder it was given in, or give it again with --import "
                            "PATH_TO_IT" if source == 'import_names' else ''))
    if not file.endswith('.py') or not stem.isidentifier():
        raise TidalError(f"cannot import '{path}' named in {source}: a module file is named NAME.py, NAME "
                         f"a Python identifier")
    loaded = sys.modules.get(stem)
    if loaded is not None:
        if os.path.abspath(getattr(loaded, '__file__', None) or '') == file:
            return
        raise TidalError(f"cannot import '{path}' named in {source} as module '{stem}': a module of that name "
                         f"is already imported (from {getattr(loaded, '__file__', None) or 'built-ins'}); "
                         f"rename the file")
    folder = os.path.dirname(file)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(stem, file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[stem] = module  # before it runs, as `import` does: its classes pickle by module name
    try:
        spec.loader.exec_module(module)
    except BaseException as err:
        sys.modules.pop(stem, None)
        if not isinstance(err, Exception):
            raise
        raise TidalError(f"'{path}' named in {source} failed to import: {_import_failure(err)}") from err


def _import_failure(err: BaseException) -> str:
    """One line on why a user's module failed to import: where a syntax error is, else the exception."""
    if isinstance(err, SyntaxError):
        where = f"{os.path.basename(err.filename or '?')}, line {err.lineno}"
        return f'syntax error ({where}): {err.msg}'
    if isinstance(err, TidalError):
        return one_line(err)
    return f'{type(err).__name__}: {one_line(err)}'


#: The registries users add to from modules of their own (the unknown-name error says how to import one).
USER_KINDS = ('policy', 'model', 'env')

#: The packages whose import registers tidal's own classes (and the config's checks on them). They are imported at
#: the first lookup in any registry rather than with `import tidal`, so that a module of tidal imported alone
#: (the command line answering `--help`) does not import torch and every policy first.
BUILTIN_PACKAGES = ('tidal.config', 'tidal.envs', 'tidal.models', 'tidal.policies', 'tidal.worker.feeds')
_builtins_asked = False


def load_builtins() -> None:
    """Import `BUILTIN_PACKAGES` once (a lookup made while they import finds what has registered so far)."""
    global _builtins_asked
    if _builtins_asked:
        return
    _builtins_asked = True
    for package in BUILTIN_PACKAGES:
        importlib.import_module(package)


class Registry:
    """A named table of classes or factories.

    A name can be taken once; `force=True` replaces it on purpose (e.g. a user's own 'sac').
    `check(name, obj)`, when set, refuses a malformed class at registration (raising), so that the error
    names the class where it is written rather than surfacing in the first run that uses it.
    """

    def __init__(self, kind: str, check: Optional[Callable[[str, Any], None]] = None) -> None:
        self.kind = kind
        self._table: dict[str, Any] = {}  # classes or factories
        self._check: Optional[Callable[[str, Any], None]] = None
        self.check = check

    @property
    def check(self) -> Optional[Callable[[str, Any], None]]:
        return self._check

    @check.setter
    def check(self, check: Optional[Callable[[str, Any], None]]) -> None:
        """Installed by a higher layer (this module imports none); what registered before it is checked now."""
        self._check = check
        if check is not None:
            for name, obj in list(self._table.items()):
                check(name, obj)

    def register(self, name: str, force: bool = False) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if not getattr(obj, '__module__', '').startswith('tidal.'):
                load_builtins()  # tidal's own before a user's, whose `force=True` then replaces one of them
            if name in self._table and not force and self._table[name] is not obj:
                raise TidalError(f"{self.kind} '{name}' is already registered by "
                                 f"{_qualname(self._table[name])}; pass force=True to replace it")
            if self._check is not None:
                self._check(name, obj)
            self._table[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> Any:
        load_builtins()
        if name not in self._table:
            raise UnknownNameError(self._unknown_message(name))
        return self._table[name]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        load_builtins()
        return sorted(self._table)

    def family(self, name: str) -> frozenset[str]:
        """`name` and the names its class's bases are registered under: what a registered subclass (a user's
        `MySAC(SACPolicy)`) is besides its own name, for rules that hold for a family of classes."""
        mro = getattr(self.get(name), '__mro__', ())
        return frozenset(registered for registered, obj in self._table.items() if obj in mro) | {name}

    def __contains__(self, name: object) -> bool:
        load_builtins()
        return name in self._table

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(str(name), self._table, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ''
        known = ', '.join(self.names()) or 'none'
        own = (f"; a {self.kind} of your own is registered by importing its module: --import MODULE_OR_FILE, "
               f"or import_names in the config") if self.kind in USER_KINDS else ''
        return f"unknown {self.kind} '{name}'{hint} (registered: {known}){own}"


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


POLICY_REGISTRY = Registry('policy')
MODEL_REGISTRY = Registry('model')
ENV_REGISTRY = Registry('env')
ENV_MANAGER_REGISTRY = Registry('env manager')
FEED_REGISTRY = Registry('feed')


def feed_class(policy_cls: Any) -> Any:
    """The registered data feed class that trains `policy_cls` (its `pipeline`)."""
    return FEED_REGISTRY.get(policy_cls.pipeline)


def policy_class(policy_type: str, policy_cfg: Optional[Mapping[str, Any]] = None) -> Any:
    """The registered class of `policy_type`, whatever its section `policy_cfg` says: no policy picks or
    builds another class from its config. What does depend on the section, the class answers under it
    (`config_owners(section)`: the keys of a policy it holds; `default_model(section)`); `policy_cfg` stays
    an argument only so that the lookups from a config read alike.
    """
    return POLICY_REGISTRY.get(policy_type)
