"""Environments: the gymnasium adapter (env type 'gym'), Atari games ('atari'), the PettingZoo adapter
('pettingzoo'), the env managers that batch envs (CartPole-v1 as arrays: 'numpy'), and `tidal/SimulatedCost-v0`
(any env with a set time per step, for scaling measurements)."""
from tidal.envs.env_manager import (BaseEnvManager, EnvManager, Step, SubprocessEnvManager,
                                    make_env_manager)
from tidal.envs.atari_env import AtariEnv
from tidal.envs.envpool_manager import EnvPoolManager
from tidal.envs.gym_env import GymEnv
from tidal.envs.numpy_cartpole import NumpyEnvManager
from tidal.envs.pettingzoo_env import PettingZooEnv
from tidal.envs.simulated_cost import SimulatedCost

__all__ = ['AtariEnv', 'BaseEnvManager', 'EnvManager', 'EnvPoolManager', 'GymEnv', 'NumpyEnvManager', 'PettingZooEnv',
           'Step', 'SimulatedCost', 'SubprocessEnvManager', 'make_env_manager']
