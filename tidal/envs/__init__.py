"""Environments: the gymnasium adapter (env type 'gym'), Atari games ('atari'), the PettingZoo adapter
('pettingzoo') and the env managers that batch envs."""
from tidal.envs.env_manager import (BaseEnvManager, EnvManager, Step, SubprocessEnvManager,
                                    make_env_manager)
from tidal.envs.atari_env import AtariEnv
from tidal.envs.envpool_manager import EnvPoolManager
from tidal.envs.gym_env import GymEnv
from tidal.envs.pettingzoo_env import PettingZooEnv

__all__ = ['AtariEnv', 'BaseEnvManager', 'EnvManager', 'EnvPoolManager', 'GymEnv', 'PettingZooEnv', 'Step',
           'SubprocessEnvManager', 'make_env_manager']
