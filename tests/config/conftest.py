"""Tiny fake policy, model, env and env manager registered under names only these tests use."""
from __future__ import annotations

import copy
from typing import Any, Mapping

import pytest

from tidal.base.defaults import FreeDict
from tidal.policies.base import Policy
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY


@MODEL_REGISTRY.register('test_cfg_model', force=True)
class TinyModel:
    def __init__(self, obs_shape: Any, action_shape: Any, hidden_size: int = 64, depth: int = 2) -> None:
        self.args = (obs_shape, action_shape, hidden_size, depth)


@MODEL_REGISTRY.register('test_cfg_width_model', force=True)
class WidthModel:
    def __init__(self, obs_shape: Any, action_shape: Any, width: int) -> None:
        self.args = (obs_shape, action_shape, width)


@POLICY_REGISTRY.register('test_cfg_policy', force=True)
class TinyPolicy(Policy):
    config = dict(
        learn=dict(
            # (int) Samples per update.
            batch_size=64,
            # (float) Adam step size.
            learning_rate=1e-3,
        ),
        model=FreeDict(hidden_size=32),
    )
    action_space = 'continuous'

    @classmethod
    def default_model(cls, cfg: Mapping[str, Any]) -> tuple[str, list[str]]:
        return 'test_cfg_model', []


@ENV_REGISTRY.register('test_cfg_env', force=True)
class TinyEnv:
    """Reports obs_shape 3; its action space is `env_kwargs.space` (continuous: shape 1, discrete: 4)."""

    config = dict(
        # (str) Registered env name.
        type='',
        # (list[str]) Modules to import first.
        import_names=[],
        # (str) Env id.
        env_id='Tiny-v0',
        # (int > 0) Collector envs.
        collector_env_num=2,
        # (float) Return that ends the run.
        stop_value=100.0,
        env_kwargs=FreeDict(),
    )
    builds = 0

    def __init__(self, cfg: dict) -> None:
        TinyEnv.builds += 1
        self.cfg = cfg

    def infer_shapes(self) -> dict:
        space = self.cfg.env_kwargs.get('space', 'continuous')
        return {'obs_shape': 3, 'action_shape': 1 if space == 'continuous' else 4, 'action_space': space}


@ENV_MANAGER_REGISTRY.register('test_cfg_manager', force=True)
class TinyManager:
    config = dict(
        # (str) Registered env manager name.
        type='test_cfg_manager',
    )


CREATE_CONFIG = {
    'env': {'type': 'test_cfg_env', 'import_names': []},
    'env_manager': {'type': 'test_cfg_manager'},
    'policy': {'type': 'test_cfg_policy', 'import_names': []},
}


@pytest.fixture
def create_config() -> dict:
    return copy.deepcopy(CREATE_CONFIG)


@pytest.fixture(autouse=True)
def count_env_builds() -> None:
    TinyEnv.builds = 0
