"""The check every registered policy, env and env manager passes: each default declares its rule.

A key whose comment has no rule would go unchecked, so a bad value (`learning_rate=-1`) would fail deep in a
run instead of at compile; registration refuses the class instead, naming it and the key. The registries
(`Registry.check`) run it: the policies layer calls it from its own check, and this package installs it on
the env registries, since the envs layer sits beside config and may not import it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterator, Mapping

from tidal.base.defaults import FreeDict, merge_defaults
from tidal.base.errors import ConfigError
from tidal.config.comments import own_comments
from tidal.config.rules import opens_with_rule
from tidal.config.tree import join_path
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY

#: The config section that a registry's classes fill, by the registry's kind.
SECTIONS = {'policy': 'policy', 'env': 'env', 'env manager': 'env_manager'}
_EXAMPLES = {bool: 'bool', int: 'int', float: 'float', str: 'str'}


def check_rules_declared(kind: str, name: str, cls: Any) -> None:
    """Every key of the `config` literals of `cls` and its bases has a rule in its comment (a base's rule
    covers a key the class sets again); free-form sections (FreeDict) and the section dicts need none.

    Only the MRO is read, not the owners a config section may add (`config_owners`): those may not be
    registered yet, and are checked when they register themselves."""
    if not isinstance(cls, type):
        return
    owners = [owner for owner in reversed(cls.__mro__) if isinstance(vars(owner).get('config'), Mapping)]
    ruled = set().union(*(_ruled_paths(owner) for owner in owners))
    defaults: dict = {}
    for owner in owners:
        defaults = merge_defaults(defaults, vars(owner)['config'])
    for path, value in _leaf_keys(defaults, ''):
        if path not in ruled:
            raise ConfigError(f"{kind} '{name}' ({cls.__module__}.{cls.__qualname__}): config key "
                              f"'{join_path(SECTIONS.get(kind, kind), path)}' declares no rule in its comment, "
                              f"e.g. '# ({_example_rule(value)}) What it sets.'")


def rules_check(kind: str) -> Callable[[str, Any], None]:
    """`check_rules_declared` for a registry of `kind`, as `Registry.check` takes it."""
    return functools.partial(check_rules_declared, kind)


def install_registry_checks() -> None:
    """Set the env and env manager registries' checks; the classes they already hold are checked now."""
    ENV_REGISTRY.check = rules_check(ENV_REGISTRY.kind)
    ENV_MANAGER_REGISTRY.check = rules_check(ENV_MANAGER_REGISTRY.kind)


@functools.lru_cache(maxsize=None)
def _ruled_paths(owner: type) -> frozenset[str]:
    """The keys of `owner`'s own `config` literal whose comment opens with a rule; a malformed rule counts
    (compiling a config names it, with the class and the key)."""
    return frozenset(path for path, comment in own_comments(owner).items() if opens_with_rule(comment))


def _leaf_keys(tree: Mapping, prefix: str) -> Iterator[tuple[str, Any]]:
    for key, value in tree.items():
        if isinstance(value, FreeDict):
            continue
        if isinstance(value, Mapping):
            yield from _leaf_keys(value, join_path(prefix, key))
        else:
            yield join_path(prefix, key), value


def _example_rule(value: Any) -> str:
    """A rule the default `value` keeps, to show the form in the error."""
    if value is None:
        return 'float or None'
    if isinstance(value, (list, tuple)):
        return f'list[{_EXAMPLES.get(type(value[0]), "str") if value else "str"}]'
    return _EXAMPLES.get(type(value), 'str')
