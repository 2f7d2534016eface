"""tidal: a registry-driven reinforcement-learning framework in PyTorch."""
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, FEED_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

# importing the packages registers the built-in models, policies, envs and env managers
import tidal.envs  # noqa: E402,F401
import tidal.models  # noqa: E402,F401
import tidal.policies  # noqa: E402,F401
from tidal.config import ConfigLayers, compile_config, read_config  # noqa: E402
import tidal.worker.feeds  # noqa: E402,F401
from tidal.entry.serial_pipeline import (serial_pipeline, serial_pipeline_muzero, serial_pipeline_onpolicy,  # noqa: E402
                                         serial_pipeline_sqil)
from tidal.entry.result import RunResult  # noqa: E402
from tidal.policies.base import Policy  # noqa: E402

__version__ = '0.1.0'

__all__ = ['ConfigLayers', 'ENV_MANAGER_REGISTRY', 'ENV_REGISTRY', 'FEED_REGISTRY', 'MODEL_REGISTRY', 'POLICY_REGISTRY', 'Policy', 'RunResult', 'compile_config',
           'read_config', 'serial_pipeline', 'serial_pipeline_muzero', 'serial_pipeline_onpolicy', 'serial_pipeline_sqil']
