"""Checks of `policy.model`, the free-form section the policy forwards to its model's constructor.

Its keys are checked against the constructor's signature rather than declared defaults, and the
env fills `obs_shape` / `action_shape` when the user leaves them out.
"""
from __future__ import annotations

import difflib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Optional

from easydict import EasyDict

from tidal.errors import ConfigError
from tidal.registry import MODEL_REGISTRY, import_names

RESERVED_KEYS = ('type', 'import_names')  # picked off by the policy, not passed to the model
SHAPE_KEYS = ('obs_shape', 'action_shape')


@dataclass(frozen=True)
class ModelArgs:
    """What a model constructor takes: `accepted` is None when it takes **kwargs."""

    name: Optional[str]
    accepted: Optional[frozenset[str]]
    required: tuple[str, ...]

    def accepts(self, key: str) -> bool:
        return self.accepted is None or key in self.accepted


def model_args(policy_cls: type, policy_type: str, model_cfg: dict) -> ModelArgs:
    """The signature of the model `policy.model` will build (its `type`, else the policy's default)."""
    name = model_cfg.get('type')
    modules = list(model_cfg.get('import_names') or [])
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"config key 'policy.model.type' must be str, got {type(name).__name__} ({name!r})")
    if not name:
        try:
            name, default_modules = policy_cls.default_model()
        except NotImplementedError:
            return ModelArgs(None, None, ())  # the policy builds its model itself: nothing to check
        modules += list(default_modules)
    import_names(modules)
    return ModelArgs(name, *_signature_args(MODEL_REGISTRY.get(name)))


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


def fill_shapes(cfg: dict, args: ModelArgs, policy_cls: type, env_cls: Callable[..., Any]) -> None:
    """Ask the env (built once, only when needed) for the shapes the model lacks, and check the
    policy's action space against the env's before any training starts."""
    model_cfg = cfg['policy']['model']
    missing = [key for key in SHAPE_KEYS if model_cfg.get(key) is None and args.accepts(key)]
    needed_space = getattr(policy_cls, 'action_space', None)
    if not missing and not needed_space:
        return
    env = env_cls(EasyDict(cfg['env']))
    try:
        info = env.infer_shapes()
    finally:
        close = getattr(env, 'close', None)
        if callable(close):
            close()
    env_space = info.get('action_space')
    if needed_space and env_space and needed_space != env_space:
        env_name = cfg['env'].get('env_id') or cfg['env']['type']
        raise ConfigError(f"policy '{cfg['policy']['type']}' needs a {needed_space} action space but "
                          f"env '{env_name}' has a {env_space} one")
    for key in missing:
        shape = info[key]
        model_cfg[key] = list(shape) if isinstance(shape, tuple) else shape
