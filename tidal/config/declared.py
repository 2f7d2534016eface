"""The rules a class declares in its `config` comments, and their check on a compiled config.

Each class's rules are parsed once, the first time a config that uses the class is compiled; a rule
that does not parse, or a default that breaks its own rule, fails right there, naming the class and
the key, so that a typo in a comment cannot silently switch a check off.
"""
from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping, Optional

from tidal.config.comments import own_comments
from tidal.config.rules import Rule, RuleSyntaxError, rule_of_comment
from tidal.config.tree import MISSING, join_path, value_at
from tidal.base.defaults import config_owners, merge_defaults, own_config
from tidal.base.errors import ConfigError


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
