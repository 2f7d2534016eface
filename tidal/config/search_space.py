"""Hyperparameter search spaces for `tidal tune`: one per policy family, or a user's YAML file.

A space maps dotted config keys to ranges. Each sampled value becomes a `--set KEY=VALUE` override, so a
trial's config goes through the same checks as a user's; the space never bypasses a key's rule.

The YAML file format (`tidal tune CONFIG --space FILE`), one entry per key:

    policy.learn.learning_rate: {type: float, low: 1.0e-5, high: 1.0e-2, log: true}
    policy.learn.epoch_per_collect: {type: int, low: 3, high: 15}        # optional: step (not with log)
    policy.collect.n_sample: {type: categorical, choices: [256, 512, 1024]}
    policy.model.encoder_hidden_sizes: {type: categorical, choices: [[64, 64], [256, 256]]}
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence

import yaml

from tidal.base.errors import ConfigError
from tidal.config.checks import unknown_key_message
from tidal.config.yaml_io import format_scalar, load_yaml

KINDS = ('float', 'int', 'categorical')
_FIELDS = {'float': {'type', 'low', 'high', 'log', 'step'}, 'int': {'type', 'low', 'high', 'log', 'step'},
           'categorical': {'type', 'choices'}}


@dataclass(frozen=True)
class Param:
    """The range of one config key: `float` or `int` in [low, high] (log-uniform with `log`, on a grid of
    `step`), or one of `choices`."""

    key: str
    kind: str
    low: float = 0.0
    high: float = 0.0
    log: bool = False
    step: Optional[float] = None
    choices: tuple[Any, ...] = ()

    def override(self, value: Any) -> str:
        """The `--set` text that puts `value` at this key."""
        return f'{self.key}={format_scalar(value)}'

    def as_spec(self) -> dict[str, Any]:
        """The entry of a space file that reads back as this range."""
        if self.kind == 'categorical':
            return {'type': 'categorical', 'choices': list(self.choices)}
        spec: dict[str, Any] = {'type': self.kind, 'low': self.low, 'high': self.high}
        if self.log:
            spec['log'] = True
        if self.step is not None:
            spec['step'] = self.step
        return spec


SearchSpace = tuple[Param, ...]


def _f(key: str, low: float, high: float, log: bool = False) -> Param:
    return Param(key, 'float', low, high, log)


def _i(key: str, low: int, high: int) -> Param:
    return Param(key, 'int', low, high)


def _c(key: str, *choices: Any) -> Param:
    return Param(key, 'categorical', choices=choices)


_WIDTHS = ([64, 64], [128, 128], [256, 256])

#: SAC and its variants (discrete SAC, SAC-V, SQIL-SAC; MASAC is SAC with multi_agent). `alpha` is the initial
#: temperature that auto_alpha tunes from; the target entropy depends on the action count, so it is left out.
_SAC = (
    _f('policy.learn.learning_rate_q', 1e-4, 3e-3, log=True),
    _f('policy.learn.learning_rate_policy', 1e-4, 3e-3, log=True),
    _c('policy.learn.batch_size', 64, 128, 256, 512),
    _c('policy.learn.discount_factor', 0.95, 0.98, 0.99, 0.995),
    _f('policy.learn.target_theta', 1e-3, 5e-2, log=True),
    _f('policy.learn.alpha', 0.01, 1.0, log=True),
    _c('policy.model.actor_hidden_sizes', *_WIDTHS),
    _c('policy.model.critic_hidden_sizes', *_WIDTHS),
)

_PPO = (
    _f('policy.learn.learning_rate', 1e-5, 3e-3, log=True),
    _c('policy.learn.batch_size', 32, 64, 128, 256),
    _i('policy.learn.epoch_per_collect', 3, 15),
    _f('policy.learn.clip_ratio', 0.1, 0.4),
    _f('policy.learn.entropy_weight', 0.0, 0.02),
    _c('policy.collect.n_sample', 256, 512, 1024, 2048),
    _c('policy.collect.discount_factor', 0.95, 0.98, 0.99, 0.995, 0.999),
    _f('policy.collect.gae_lambda', 0.8, 1.0),
    _c('policy.model.encoder_hidden_sizes', *_WIDTHS),
)

#: A2C: PPO's keys less its epochs and clip ratio, over the short rollouts it learns from once (a minibatch as large
#: as the rollout makes one gradient step of it, as the paper's).
_A2C = (
    _f('policy.learn.learning_rate', 1e-4, 3e-3, log=True),
    _c('policy.learn.batch_size', 40, 80, 160, 320),
    _f('policy.learn.entropy_weight', 0.0, 0.02),
    _f('policy.learn.value_weight', 0.25, 1.0),
    _c('policy.learn.adv_norm', False, True),
    _c('policy.collect.n_sample', 40, 80, 160, 320),
    _c('policy.collect.discount_factor', 0.95, 0.98, 0.99, 0.995),
    _f('policy.collect.gae_lambda', 0.8, 1.0),
    _c('policy.model.encoder_hidden_sizes', *_WIDTHS),
)

_DQN = (
    _f('policy.learn.learning_rate', 1e-4, 3e-3, log=True),
    _c('policy.learn.batch_size', 32, 64, 128, 256, 512),
    _c('policy.discount_factor', 0.95, 0.97, 0.99, 0.995),
    _c('policy.nstep', 1, 3, 5),
    _c('policy.learn.target_update_freq', 100, 500, 1000, 2500),
    _c('policy.other.eps.decay', 5_000, 10_000, 20_000, 50_000),
    _c('policy.model.encoder_hidden_size_list', [64, 64], [128, 128], [128, 128, 64], [256, 256]),
    _c('policy.model.dueling', False, True),
)

_DDPG = (
    _f('policy.learn.learning_rate_actor', 1e-4, 3e-3, log=True),
    _f('policy.learn.learning_rate_critic', 1e-4, 3e-3, log=True),
    _c('policy.learn.batch_size', 64, 128, 256, 512),
    _c('policy.learn.discount_factor', 0.95, 0.98, 0.99, 0.995),
    _f('policy.learn.target_theta', 1e-3, 5e-2, log=True),
    _f('policy.collect.noise_sigma', 0.05, 0.5, log=True),
    _c('policy.nstep', 1, 3, 5),
    _c('policy.model.actor_hidden_sizes', *_WIDTHS),
    _c('policy.model.critic_hidden_sizes', *_WIDTHS),
)

_TAAC = _SAC[:6] + (
    _f('policy.learn.switch_alpha', 0.1, 10.0, log=True),
    _c('policy.collect.unroll_len', 2, 4, 8),
    _c('policy.model.actor_hidden_sizes', *_WIDTHS),
    _c('policy.model.critic_hidden_sizes', *_WIDTHS),
)

#: The space of each policy type; a policy of another type uses that of the nearest type it derives from.
FAMILY_SPACES: dict[str, SearchSpace] = {
    'sac': _SAC,
    'discrete_sac': _SAC,
    'dqn': _DQN,
    'sql': _DQN + (_f('policy.learn.alpha', 0.01, 1.0, log=True),),
    'ddpg': _DDPG,
    'td3': _DDPG + (_c('policy.learn.actor_update_freq', 1, 2, 3), _f('policy.learn.noise_sigma', 0.05, 0.5, log=True)),
    'sqil_sac': _SAC,
    'sac_v': _SAC + (_f('policy.learn.learning_rate_value', 1e-4, 3e-3, log=True),),
    'ppo': _PPO,
    'a2c': _A2C,
    'ppg': _PPO + (_c('policy.aux.interval', 4, 8, 16, 32),
                   _f('policy.aux.policy_kl_loss_weight', 0.3, 3.0, log=True)),
    'taac': _TAAC,
    'taac_l': _TAAC,
    'taac_q': _TAAC,
}


def family_space(policy_types: Sequence[str]) -> SearchSpace:
    """The space of the first of `policy_types` (a policy's type, then those of the classes it derives
    from) that has one; refused, naming the policy, when none has."""
    for policy_type in policy_types:
        if policy_type in FAMILY_SPACES:
            return FAMILY_SPACES[policy_type]
    raise ConfigError(f"tidal tune has no search space for policy '{policy_types[0]}'; give one with --space FILE "
                      f"(families with a space: {', '.join(sorted(FAMILY_SPACES))})")


def without_keys(space: SearchSpace, fixed: Sequence[str]) -> SearchSpace:
    """The space less the keys that `fixed` (`--set` overrides, KEY=VALUE) pin for every trial."""
    pinned = {text.partition('=')[0].strip() for text in fixed}
    return tuple(param for param in space if param.key not in pinned)


def read_space(path: str | os.PathLike[str]) -> SearchSpace:
    """A search space file; a wrong entry is a one-line ConfigError naming the file and the key."""
    where = f"search space '{os.fspath(path)}'"
    try:
        with open(path, encoding='utf-8') as file:
            data = load_yaml(file.read())
    except OSError as err:
        raise ConfigError(f'{where}: cannot read it: {err.strerror or err}') from err
    except yaml.YAMLError as err:
        raise ConfigError(f"{where}: not valid YAML: {' '.join(str(err).split())}") from err
    if not isinstance(data, Mapping) or not data:
        raise ConfigError(f'{where} must map config keys to ranges, e.g. '
                          f'policy.learn.learning_rate: {{type: float, low: 1.0e-5, high: 1.0e-2, log: true}}')
    return tuple(parse_param(str(key), spec, f"{where}, key '{key}'") for key, spec in data.items())


def parse_param(key: str, spec: Any, where: str) -> Param:
    """One entry of a space file: `spec` is {type, low, high[, log][, step]} or {type: categorical, choices}."""
    if not isinstance(spec, Mapping):
        raise ConfigError(f'{where}: expected a mapping like {{type: float, low: 0.1, high: 1.0}}, got {spec!r}')
    kind = spec.get('type')
    if kind not in KINDS:
        raise ConfigError(f"{where}: type must be one of {', '.join(KINDS)}, got {kind!r}")
    unknown = sorted(set(map(str, spec)) - _FIELDS[kind])
    if unknown:
        raise ConfigError(f"{where}: unknown field '{unknown[0]}' for type {kind} "
                          f"(fields: {', '.join(sorted(_FIELDS[kind]))})")
    if kind == 'categorical':
        choices = spec.get('choices')
        if not isinstance(choices, list) or not choices:
            raise ConfigError(f'{where}: choices must be a non-empty list, got {choices!r}')
        return Param(key, kind, choices=tuple(choices))
    return _numeric(key, kind, spec, where)


def _numeric(key: str, kind: str, spec: Mapping[str, Any], where: str) -> Param:
    number = (int,) if kind == 'int' else (int, float)
    bounds = []
    for field in ('low', 'high'):
        value = spec.get(field)
        if isinstance(value, bool) or not isinstance(value, number) or not math.isfinite(value):
            raise ConfigError(f"{where}: {field} must be {'an integer' if kind == 'int' else 'a finite number'}, "
                              f"got {value!r}")
        bounds.append(value)
    low, high = bounds
    log, step = spec.get('log', False), spec.get('step')
    if low > high:
        raise ConfigError(f'{where}: low {low} > high {high}')
    if not isinstance(log, bool):
        raise ConfigError(f'{where}: log must be true or false, got {log!r}')
    if log and low <= 0:
        raise ConfigError(f'{where}: log needs low > 0, got {low}')
    if step is not None:
        if log:
            raise ConfigError(f'{where}: step and log cannot be used together')
        if isinstance(step, bool) or not isinstance(step, number) or step <= 0:
            raise ConfigError(f'{where}: step must be a number > 0, got {step!r}')
    return Param(key, kind, low, high, log, step)


def check_space_keys(space: SearchSpace, cfg: Mapping[str, Any], where: str) -> None:
    """Refuse a key that the resolved config does not have, naming the closest keys it has."""
    if not space:
        raise ConfigError(f'{where}: nothing to search (every key of the space is fixed by --set)')
    for param in space:
        node: Any = cfg
        parts = param.key.split('.')
        for depth, part in enumerate(parts):
            if not isinstance(node, Mapping):
                raise ConfigError(f"{where}: config key '{'.'.join(parts[:depth])}' holds a value, not the "
                                  f"key '{param.key}'")
            if part not in node:
                raise ConfigError(f"{where}: {unknown_key_message(node, part, '.'.join(parts[:depth]))}")
            node = node[part]
