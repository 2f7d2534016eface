"""The rules a class declares in its `config` comments: their check on a compiled config, and the check at
registration that every default has one.

Each class's rules are parsed once, the first time a config that uses the class is compiled; a rule
that does not parse, or a default that breaks its own rule, fails right there, naming the class and
the key, so that a typo in a comment cannot silently switch a check off. A key whose comment has no rule
would go unchecked, so a bad value (`learning_rate=-1`) would fail deep in a run instead of at compile;
registration refuses such a class instead, naming it and the key. The registries (`Registry.check`) run that
check: the policies layer calls it from its own check, and this package installs it on the env registries,
since the envs layer sits beside config and may not import it.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Iterable, Iterator, Mapping, Optional

from tidal.base.defaults import FreeDict, config_owners, merge_defaults, own_config
from tidal.base.errors import ConfigError
from tidal.config.comments import own_comments
from tidal.config.rules import Rule, RuleSyntaxError, opens_with_rule, rule_of_comment
from tidal.config.tree import MISSING, join_path, value_at
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY


def class_rules(cls: type, section: Optional[Mapping[str, Any]] = None) -> dict[str, Rule]:
    """Dotted key path -> rule, over the config owners of `cls` under `section` (its config section; None:
    its defaults): the last owner that writes a rule for a key wins. The returned dict is shared (cached);
    do not change it."""
    return _owners_rules(config_owners(cls, section))


@functools.lru_cache(maxsize=None)
def _owners_rules(owners: tuple[Any, ...]) -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    defaults: dict = {}
    for owner in owners:
        config = own_config(owner)
        if config is not None:
            rules.update(_own_rules(owner))
            defaults = merge_defaults(defaults, config)
    for path, rule in rules.items():
        value = value_at(defaults, path, MISSING)
        if value is MISSING:
            continue
        try:
            rule.check(value, path)
        except ConfigError as err:
            raise RuleSyntaxError(f"the default of '{path}' in {_name(owners[-1])} breaks its own rule "
                                  f"'({rule.text})': {err}") from None
    return rules


@functools.lru_cache(maxsize=None)
def _own_rules(owner: type) -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for path, comment in own_comments(owner).items():
        try:
            rule = rule_of_comment(comment)
        except RuleSyntaxError as err:
            first_line = comment.splitlines()[0]
            raise RuleSyntaxError(f"malformed config rule of key '{path}' in {_name(owner)} "
                                  f"('# {first_line}'): {err}") from None
        if rule is not None:
            rules[path] = rule
    return rules


def rules_by_path(sections: Iterable[tuple[str, Any, Optional[Mapping[str, Any]]]]) -> dict[str, Rule]:
    """Full key path -> rule over `sections`: (section path, '' for the top level; the class whose `config`
    declares its keys; the section as the user wrote it, which may add config owners)."""
    return {join_path(prefix, path): rule for prefix, cls, section in sections
            for path, rule in class_rules(cls, section).items()}


def check_declared(cfg: Mapping, sections: Iterable[tuple[str, type]]) -> None:
    """Every value of `cfg` that a rule covers keeps it; `sections` pairs a section's path ('' is the top
    level) with the class whose `config` declares its keys."""
    for prefix, cls in sections:
        section = value_at(cfg, prefix) if prefix else cfg
        if not isinstance(section, Mapping):
            continue
        for path, rule in class_rules(cls, section).items():
            value = value_at(section, path, MISSING)
            if value is not MISSING:
                rule.check(value, join_path(prefix, path))


def _name(cls: Any) -> str:
    return f'{cls.__module__}.{cls.__qualname__}' if isinstance(cls, type) else repr(cls)


# ----- every default declares its rule (checked at registration) -------------------------------
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
            raise ConfigError(f"{kind} '{name}' ({_name(cls)}): config key "
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
