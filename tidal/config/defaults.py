"""The defaults tree a config is checked against: run-level keys and the classes' `config` dicts."""
from __future__ import annotations

import copy
from typing import Any, Mapping

from tidal.config.schema import FreeDict


class RunConfig:
    """Top-level keys of a compiled config, beside its env, env_manager and policy sections."""

    config: dict = dict(
        # (str) Name of the run folder; empty means '<policy type>_<env id>'.
        exp_name='',
        # (int) Seed of the run; compile_config's `seed` argument (the CLI's -s) sets it.
        seed=0,
        # (list[str]) Modules to import before names are looked up (a user's own policy, model or env).
        import_names=[],
        # (int) CPU threads for torch; 0 keeps torch's default (one per core). Small networks run
        # fastest on 1 whenever anything else uses the other cores, where extra threads spin and stall.
        torch_threads=1,
        # (bool) Flush subnormal floats to zero on CPU. Adam's second moments of rarely-moving weights
        # decay into subnormals, which make every matmul that touches them several times slower.
        flush_denormal=True,
    )


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
