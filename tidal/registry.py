"""Name -> class registries, so configs can refer to policies, models and envs by name."""
from __future__ import annotations

import difflib
import importlib
from typing import Any, Callable, Iterable, Mapping, Optional, TypeVar

from tidal.base.errors import TidalError, UnknownNameError

T = TypeVar('T')


def import_names(modules: Iterable[str]) -> None:
    """Import modules so that the classes they register become available by name."""
    for module in modules or ():
        try:
            importlib.import_module(module)
        except ImportError as err:
            raise TidalError(f"cannot import module '{module}' named in import_names: {err}") from err


class Registry:
    """A named table of classes or factories.

    A name can be taken once; `force=True` replaces it on purpose (e.g. a user's own 'sac').
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._table: dict[str, Callable[..., Any]] = {}

    def register(self, name: str, force: bool = False) -> Callable[[T], T]:
        def decorator(obj: T) -> T:
            if name in self._table and not force and self._table[name] is not obj:
                raise TidalError(f"{self.kind} '{name}' is already registered by "
                                 f"{_qualname(self._table[name])}; pass force=True to replace it")
            self._table[name] = obj
            return obj

        return decorator

    def get(self, name: str) -> Any:
        if name not in self._table:
            raise UnknownNameError(self._unknown_message(name))
        return self._table[name]

    def build(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self.get(name)(*args, **kwargs)

    def names(self) -> list[str]:
        return sorted(self._table)

    def __contains__(self, name: object) -> bool:
        return name in self._table

    def _unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(str(name), self._table, n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ''
        known = ', '.join(self.names()) or 'none'
        return f"unknown {self.kind} '{name}'{hint} (registered: {known})"


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
    """The class that runs `policy_type` under `policy_cfg` (the policy section as the user wrote it, or
    compiled): the registered class, or the more specific one its `specialize` classmethod picks.

    Every lookup of a policy class from a config goes through here, so that defaults, rules, model
    checks, the pipeline and the built policy all come from the same class.
    """
    cls = POLICY_REGISTRY.get(policy_type)
    specialize = getattr(cls, 'specialize', None)
    return specialize(policy_cfg if policy_cfg is not None else {}) if callable(specialize) else cls
