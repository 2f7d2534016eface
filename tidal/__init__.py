"""tidal: a registry-driven reinforcement-learning framework in PyTorch."""
from tidal.registry import ENV_MANAGER_REGISTRY, ENV_REGISTRY, MODEL_REGISTRY, POLICY_REGISTRY

__version__ = '0.1.0'
