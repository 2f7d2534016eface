"""Environments: the gymnasium adapter (env type 'gym'), the PettingZoo one ('pettingzoo') and the env
managers that batch envs (gymnasium's vector envs, or EnvPool's)."""
from tidal.envs.env_manager import (BaseEnvManager, EnvManager, Step, SubprocessEnvManager,
                                    make_env_manager)
from tidal.envs.envpool_manager import EnvPoolManager
from tidal.envs.gym_env import GymEnv
from tidal.envs.pettingzoo_env import PettingZooEnv

__all__ = ['BaseEnvManager', 'EnvManager', 'EnvPoolManager', 'GymEnv', 'PettingZooEnv', 'Step',
           'SubprocessEnvManager', 'make_env_manager']
