"""Checks of `policy.model`, the free-form section the policy forwards to its model's constructor.

Its keys are checked against the constructor's signature rather than declared defaults, and the
env fills `obs_shape` / `action_shape` (and a multi-agent model's `agent_num`, `agent_obs_shape`,
`global_obs_shape`) when the user leaves them out.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import difflib
import inspect
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Mapping, Optional, Union

from tidal.base.defaults import ConfigRule
from tidal.config.rules import Rule, parse_rule
from tidal.base.errors import ConfigError
from tidal.registry import MODEL_REGISTRY, import_names

RESERVED_KEYS = ('type', 'import_names')  # picked off by the policy, not passed to the model
# the keys an env fills from its spaces (`infer_shapes`): a single agent's, and a multi-agent model's
SHAPE_KEYS = ('obs_shape', 'action_shape', 'agent_num', 'agent_obs_shape', 'global_obs_shape')


@dataclass(frozen=True)
class ModelArgs:
    """What a model constructor takes: `accepted` is None when it takes **kwargs."""

    name: Optional[str]
    accepted: Optional[frozenset[str]]
    required: tuple[str, ...]
    #: Rules from the constructor's type hints, e.g. `bool` -> bool, `Sequence[int]` -> list[int].
    rules: Mapping[str, Rule] = field(default_factory=dict)

    def accepts(self, key: str) -> bool:
        return self.accepted is None or key in self.accepted


def model_args(policy_cls: Any, policy_type: str, model_cfg: dict, policy_cfg: Mapping[str, Any]) -> ModelArgs:
    """The signature of the model `policy.model` will build (its `type`, else the default the policy names
    under `policy_cfg`, its section compiled or as the user wrote it: `multi_agent` picks another).
    `policy_cls` is a registered policy class, untyped here since config sits below the policies."""
    name = model_cfg.get('type')
    modules = list(model_cfg.get('import_names') or [])
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"config key 'policy.model.type' must be str, got {type(name).__name__} ({name!r})")
    if not name:
        name, default_modules = policy_cls.default_model(policy_cfg)
        modules += list(default_modules)
    import_names(modules)
    builder = MODEL_REGISTRY.get(name)
    return ModelArgs(name, *_signature_args(builder), hint_rules(builder))


def _signature_args(builder: Callable[..., Any]) -> tuple[Optional[frozenset[str]], tuple[str, ...]]:
    try:
        params = inspect.signature(builder).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature
        return None, ()
    keyword = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    takes_kwargs = any(p.kind == p.VAR_KEYWORD for p in params)
    required = tuple(p.name for p in keyword if p.default is p.empty)
    return (None if takes_kwargs else frozenset(p.name for p in keyword)), required


def check_model_keys(args: ModelArgs, model_cfg: dict) -> None:
    """Every key of `policy.model` must be an argument of the model constructor."""
    if args.accepted is None:
        return
    for key in model_cfg:
        if key in RESERVED_KEYS or key in args.accepted:
            continue
        close = difflib.get_close_matches(str(key), sorted(args.accepted), n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
                else f"its arguments are: {', '.join(sorted(args.accepted)) or 'none'}")
        raise ConfigError(f"policy.model.{key} is not an argument of model '{args.name}'; {hint}")


def check_required_model_keys(args: ModelArgs, model_cfg: dict, skip: tuple[str, ...] = ()) -> None:
    """Constructor arguments without a default that the config still leaves unset."""
    missing = [name for name in args.required if name not in model_cfg and name not in skip]
    if missing:
        keys = ', '.join(f'policy.model.{name}' for name in missing)
        raise ConfigError(f"model '{args.name}' needs {keys}; set {'it' if len(missing) == 1 else 'them'} "
                          f"in the config")


def check_model_values(args: ModelArgs, model_cfg: dict, skip: frozenset[str] = frozenset()) -> None:
    """Each `policy.model` value keeps the rule its constructor's type hint gives (keys in `skip` are
    checked by the rules the policy's config declares instead)."""
    for key, value in model_cfg.items():
        rule = args.rules.get(key)
        if rule is not None and key not in skip:
            rule.check(value, f'policy.model.{key}')


def hint_rules(builder: Callable[..., Any]) -> dict[str, Rule]:
    """Rules for the constructor arguments whose type hints say what a config value must be.

    A size or shape (`*_size`, `*_sizes`, `*_shape`) must be positive: `hidden_sizes: Sequence[int]`
    gives list[int > 0]. Hints the grammar cannot say (a module, a callable) give no rule.
    A hint `Annotated[..., ConfigRule(text, reason)]` states its rule outright (a flat shape's length).
    """
    target = builder.__init__ if inspect.isclass(builder) else builder
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception:  # an unresolvable forward reference: no hints, no rules
        return {}
    rules = {}
    for name, hint in hints.items():
        text = _hint_text(hint, positive=name.endswith(('_size', '_sizes', '_shape')))
        if name != 'return' and text is not None:
            stated = _stated_rule(hint)
            rules[name] = dataclasses.replace(parse_rule(text), reason=stated.reason if stated else '')
    return rules


def _stated_rule(hint: Any) -> Optional[ConfigRule]:
    """The ConfigRule an `Annotated` hint carries, if any."""
    if typing.get_origin(hint) is not Annotated:
        return None
    return next((item for item in hint.__metadata__ if isinstance(item, ConfigRule)), None)


def _hint_text(hint: Any, positive: bool) -> Optional[str]:
    """The rule text of a type hint, or None if the grammar cannot express it."""
    if typing.get_origin(hint) is Annotated:
        stated = _stated_rule(hint)
        return stated.text if stated is not None else _hint_text(typing.get_args(hint)[0], positive)
    if hint is type(None):
        return 'None'
    simple = {bool: 'bool', int: 'int > 0' if positive else 'int', float: 'float', str: 'str'}
    if hint in simple:
        return simple[hint]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        parts = [_hint_text(arg, positive) for arg in args]
        texts = [part for part in parts if part is not None]
        return ' or '.join(texts) if len(texts) == len(parts) else None
    if origin in (list, tuple, collections.abc.Sequence) and args:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            return None
        item = _hint_text(args[0], positive)
        return None if item is None else f'list[{item}]'
    return None
