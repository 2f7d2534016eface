"""Class `config` defaults: the FreeDict marker and the merge of a class's defaults over its bases'.

The ground floor of configs: policies, envs and the config compiler all use it, so it imports
nothing else of tidal.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from easydict import EasyDict


class FreeDict(EasyDict):
    """A config section whose keys are not declared in the defaults.

    The user may add any key here; the section is checked elsewhere (for `policy.model`, against
    the model constructor's signature) or forwarded as it is (`env.env_kwargs` to `gymnasium.make`).
    An EasyDict, so it survives inside EasyDict configs and takes attribute writes.
    """


@dataclass(frozen=True)
class ConfigRule:
    """`Annotated` metadata on a model constructor's argument: the rule a `policy.model` value must keep
    (in the grammar of config comments) where its type hint alone cannot say it, and why, for the error.

    `obs_shape: Annotated[Shape, ConfigRule('int > 0 or list[int > 0] of length 1', 'MLP models take flat
    vectors')]` lets the config compiler refuse an image shape an env reports before any model is built.
    """

    text: str
    reason: str = ''


def merge_defaults(base: Mapping, update: Mapping) -> dict:
    """`update` merged over a copy of `base`; a section stays free-form if either side marks it so."""
    free = isinstance(base, FreeDict) or isinstance(update, FreeDict)
    merged: dict = FreeDict() if free else {}
    for key, value in base.items():
        merged[key] = copy.deepcopy(value)
    for key, value in update.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = merge_defaults(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def own_config(owner: Any) -> Optional[Mapping]:
    """The `config` literal `owner` itself defines (not one it inherits), or None."""
    config = vars(owner).get('config') if hasattr(owner, '__dict__') else None
    return config if isinstance(config, Mapping) else None


def mro_owners(cls: type) -> tuple[type, ...]:
    """The classes of `cls`'s MRO that define a `config`, base first: the default config owners."""
    return tuple(owner for owner in reversed(cls.__mro__) if own_config(owner) is not None)


def config_owners(obj: Any, section: Optional[Mapping[str, Any]] = None) -> tuple[Any, ...]:
    """The objects whose `config` literals make up `obj`'s keys under `section` (its config section, as the
    user wrote it or compiled; None: its defaults), base first, so that a later owner's keys win.

    A class may say which through a `config_owners(section)` classmethod (a policy that holds another one
    adds the held policy's owners to its own); otherwise they are the classes of its MRO. The defaults, the
    declared rules and the key comments all walk these owners, so they always agree.
    """
    if not isinstance(obj, type):
        return (obj,)
    owners = getattr(obj, 'config_owners', None)
    return tuple(owners(section if section is not None else {})) if callable(owners) else mro_owners(obj)


def class_defaults(obj: Any, section: Optional[Mapping[str, Any]] = None) -> dict:
    """The `config` dicts of `obj`'s config owners under `section` merged, the later winning (like
    Policy.default_config), with FreeDict markers kept so that free-form sections stay recognisable."""
    merged: dict = {}
    for owner in config_owners(obj, section):
        config = own_config(owner)
        if config is not None:
            merged = merge_defaults(merged, config)
    return merged
