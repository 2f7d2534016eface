"""Environments: the gymnasium adapter (env type 'gym'), the PettingZoo one ('pettingzoo') and the env
managers that batch envs."""
from tidal.envs.env_manager import (BaseEnvManager, EnvManager, Step, SubprocessEnvManager,
                                    make_env_manager)
from tidal.envs.gym_env import GymEnv
from tidal.envs.pettingzoo_env import PettingZooEnv

__all__ = ['BaseEnvManager', 'EnvManager', 'GymEnv', 'PettingZooEnv', 'Step', 'SubprocessEnvManager',
           'make_env_manager']
