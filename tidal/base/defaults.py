"""Class `config` defaults: the FreeDict marker and the merge of a class's defaults over its bases'.

The ground floor of configs: policies, envs and the config compiler all use it, so it imports
nothing else of tidal.
"""
from __future__ import annotations

import copy
from typing import Any, Mapping

from easydict import EasyDict


class FreeDict(EasyDict):
    """A config section whose keys are not declared in the defaults.

    The user may add any key here; the section is checked elsewhere (for `policy.model`, against
    the model constructor's signature) or forwarded as it is (`env.env_kwargs` to `gymnasium.make`).
    An EasyDict, so it survives inside EasyDict configs and takes attribute writes.
    """


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


def class_defaults(obj: Any) -> dict:
    """The `config` dicts of a class and its bases merged, the subclass winning (like Policy.default_config),
    with FreeDict markers kept so that free-form sections stay recognisable."""
    owners = reversed(obj.__mro__) if isinstance(obj, type) else (obj,)
    merged: dict = {}
    for owner in owners:
        config = vars(owner).get('config') if hasattr(owner, '__dict__') else None
        if isinstance(config, Mapping):
            merged = merge_defaults(merged, config)
    return merged
