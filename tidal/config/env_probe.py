"""The one env compile_config builds: it gives the model its shapes and proves the env arguments work.

A config alone cannot say how large the env's observations and actions are, nor whether
`env.env_kwargs` suit the env: some bad arguments (a string for Pendulum's `g`) only fail once the env
steps. Building the env at compile time turns both into one-line errors before a run folder exists.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from easydict import EasyDict

from tidal.config.model_args import SHAPE_KEYS, ModelArgs
from tidal.base.errors import ConfigError, EnvError, TidalError


def probe_env(cfg: dict, args: ModelArgs, policy_cls: type, env_cls: Callable[..., Any]) -> dict:
    """Build the env once: read its shapes and action space, and reset it (seed 0) and step it once with
    a sampled action when it can make a gymnasium env. Fills the shapes `policy.model` lacks, checks
    those it sets and the policy's action space; returns what the env reported."""
    env = env_cls(EasyDict(cfg['env']))
    try:
        info = env.infer_shapes()
        make = getattr(env, 'make', None)
        if callable(make):
            _first_step(make, cfg['env'])
    finally:
        close = getattr(env, 'close', None)
        if callable(close):
            close()
    _check_action_space(cfg, policy_cls, info.get('action_space'))
    model_cfg = cfg['policy']['model']
    for key in SHAPE_KEYS:
        if key not in info or not args.accepts(key):
            continue
        reported = _plain_shape(info[key])
        if model_cfg.get(key) is None:
            _check_reported_shape(args, key, reported, cfg['env'])
            model_cfg[key] = reported
        elif _as_tuple(model_cfg[key]) != _as_tuple(reported):
            raise ConfigError(f"config key 'policy.model.{key}' is {model_cfg[key]!r} but env "
                              f"'{env_name(cfg['env'])}' has {reported!r}; leave the key out to take the env's")
    env_space = info.get('action_space')
    if env_space is not None and args.accepted is not None and args.accepts('action_space'):
        # a model that serves both kinds of action space (PPO's) is told which one this env has
        if model_cfg.get('action_space') is None:
            model_cfg['action_space'] = env_space
        elif model_cfg['action_space'] != env_space:
            raise ConfigError(f"config key 'policy.model.action_space' is {model_cfg['action_space']!r} but "
                              f"env '{env_name(cfg['env'])}' has {env_space!r} actions; leave the key out to take "
                              f"the env's")
    return info


def env_name(env_cfg: Mapping) -> str:
    return env_cfg.get('env_id') or env_cfg['type']


def _first_step(make: Callable[[], Any], env_cfg: Mapping) -> None:
    """reset(seed=0) and one step with a sampled action; any failure is an EnvError naming the env."""
    kwargs = dict(env_cfg.get('env_kwargs') or {})
    stage = 'creation'
    instance = None
    try:
        instance = make()
        stage = 'reset'
        instance.reset(seed=0)
        stage = 'first step'
        instance.action_space.seed(0)
        instance.step(instance.action_space.sample())
    except TidalError:
        raise
    except Exception as err:
        detail = ' '.join(f'{type(err).__name__}: {err}'.split())
        raise EnvError(f"env '{env_name(env_cfg)}' fails at its {stage} with env.env_kwargs {kwargs}: "
                       f"{detail}") from err
    finally:
        if instance is not None:
            try:
                instance.close()
            except Exception:  # a broken env may not close cleanly either; the error above matters
                pass


def _check_reported_shape(args: ModelArgs, key: str, shape: Any, env_cfg: Mapping) -> None:
    """A shape the env reports must suit the model (an image for an MLP model does not); the error names
    the env, since the user never wrote the value."""
    rule = args.rules.get(key)
    if rule is None or rule.problem(shape, f'policy.model.{key}') is None:
        return
    because = f'; {rule.reason}' if rule.reason else ''
    raise ConfigError(f"env '{env_name(env_cfg)}' gives policy.model.{key} {shape!r} but model '{args.name}' "
                      f"takes {rule.text}{because}")


def _check_action_space(cfg: dict, policy_cls: Any, env_space: Any) -> None:
    needed_space = policy_cls.action_space_of(cfg['policy'])
    if needed_space and env_space and needed_space != env_space:
        raise ConfigError(f"policy '{cfg['policy']['type']}' needs a {needed_space} action space but "
                          f"env '{env_name(cfg['env'])}' has a {env_space} one")


def _plain_shape(shape: Any) -> Any:
    return list(shape) if isinstance(shape, tuple) else shape


def _as_tuple(shape: Any) -> tuple:
    """3, [3] and (3,) are the same shape."""
    return tuple(shape) if isinstance(shape, (list, tuple)) else (shape,)
