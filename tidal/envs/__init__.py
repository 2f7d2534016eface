"""Environments: the gymnasium adapter (env type 'gym') and the env managers that batch envs."""
from tidal.envs.env_manager import (BaseEnvManager, EnvManager, Step, SubprocessEnvManager,
                                    make_env_manager)
from tidal.envs.gym_env import GymEnv

__all__ = ['BaseEnvManager', 'EnvManager', 'GymEnv', 'Step', 'SubprocessEnvManager', 'make_env_manager']
