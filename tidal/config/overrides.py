"""`--set KEY=VALUE` overrides: parsing, and applying them to a merged config with the same checks."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from tidal.config.checks import is_free, merge_checked
from tidal.config.rules import Rule
from tidal.config.yaml_io import parse_scalar
from tidal.base.errors import ConfigError


@dataclass(frozen=True)
class Override:
    """One parsed override: `path` ('policy', 'learn', 'batch_size'), its YAML value and the raw text."""

    path: tuple[str, ...]
    value: Any
    text: str

    def as_tree(self) -> dict:
        """The override as a nested dict, e.g. {'policy': {'learn': {'batch_size': 128}}}."""
        tree: Any = self.value
        for key in reversed(self.path):
            tree = {key: tree}
        return tree


def parse_override(text: str) -> Override:
    key, sep, raw = text.partition('=')
    path = tuple(part.strip() for part in key.split('.'))
    if not sep or not all(path):
        raise ConfigError(f"override '{text}' must look like KEY=VALUE, e.g. policy.learn.batch_size=128")
    raw = raw.strip()
    return Override(path, parse_scalar(raw), raw)


def parse_overrides(texts: Iterable[str]) -> list[Override]:
    if isinstance(texts, str):  # a single override passed bare would be split into characters
        texts = [texts]
    return [parse_override(text) for text in texts]


def apply_override(schema: Mapping, cfg: Mapping, override: Override, rules: Mapping[str, Rule] = {}) -> dict:
    """`cfg` with the override merged in; a declared string key takes the raw text (`exp_name=2024`), and
    `null` is None where the key's rule (in `rules`, by full key path) allows it, a bool where it takes one
    (`policy.learn.compile=off`)."""
    value = override.value
    declares_str = isinstance(_declared_at(schema, override.path), str)
    rule = rules.get('.'.join(override.path))
    takes_bool = rule is not None and any(alt.kind == 'bool' for alt in rule.alternatives)
    if declares_str and value is not None and not isinstance(value, str) and not (takes_bool and isinstance(value, bool)):
        value = override.text
    tree = Override(override.path, value, override.text).as_tree()
    return merge_checked(schema, cfg, tree, from_text=True, rules=rules)


def _declared_at(schema: Mapping, path: tuple[str, ...]) -> Any:
    """The default at `path`, or None where the path is free-form or undeclared."""
    node: Any = schema
    for key in path:
        if is_free(node) or not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node
