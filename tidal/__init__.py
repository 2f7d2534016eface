"""tidal: a registry-driven reinforcement-learning framework in PyTorch.

The public names below are imported at their first use, not with the package: `tidal --help` answers without
importing torch, and the registries import tidal's own policies, models and envs at their first lookup
(`tidal.registry.load_builtins`).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tidal.config import ConfigLayers, compile_config, read_config
    from tidal.entry.agent import Agent, load
    from tidal.entry.result import RunResult
    from tidal.entry.serial_pipeline import (serial_pipeline, serial_pipeline_muzero, serial_pipeline_offline,
                                             serial_pipeline_onpolicy, serial_pipeline_sqil)
    from tidal.policies.base import Policy
    from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, FEED_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

__version__ = '0.1.0'

#: Each public name and the module it lives in.
_HOMES = {
    'ConfigLayers': 'tidal.config', 'compile_config': 'tidal.config', 'read_config': 'tidal.config',
    'ENV_MANAGER_REGISTRY': 'tidal.registry', 'ENV_REGISTRY': 'tidal.registry', 'FEED_REGISTRY': 'tidal.registry',
    'MODEL_REGISTRY': 'tidal.registry', 'POLICY_REGISTRY': 'tidal.registry',
    'Agent': 'tidal.entry.agent', 'load': 'tidal.entry.agent',
    'Policy': 'tidal.policies.base', 'RunResult': 'tidal.entry.result',
    'serial_pipeline': 'tidal.entry.serial_pipeline', 'serial_pipeline_muzero': 'tidal.entry.serial_pipeline',
    'serial_pipeline_onpolicy': 'tidal.entry.serial_pipeline', 'serial_pipeline_sqil': 'tidal.entry.serial_pipeline',
    'serial_pipeline_offline': 'tidal.entry.serial_pipeline',
}
_SUBPACKAGES = ('base', 'config', 'entry', 'envs', 'mcts', 'models', 'policies', 'registry', 'rl_utils', 'worker')

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """A public name or a subpackage, imported now (PEP 562) and kept."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f'tidal.{name}')
    if name not in _HOMES:
        raise AttributeError(f"module 'tidal' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOMES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES, *_SUBPACKAGES})
