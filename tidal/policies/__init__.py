"""Registered policies; importing this package registers the built-in ones."""
from tidal.policies.base import Policy
from tidal.policies.discrete_sac import DiscreteSACPolicy
from tidal.policies.dqn import DQNPolicy
from tidal.policies.muzero import MuZeroPolicy
from tidal.policies.muzero_repr import MuZeroReprPolicy
from tidal.policies.ppg import PPGPolicy
from tidal.policies.ppo import PPOPolicy
from tidal.policies.sac import SACPolicy
from tidal.policies.sac_v import SACVPolicy
from tidal.policies.sqil_sac import SQILSACPolicy
from tidal.policies.taac import TAACPolicy, TaacLPolicy, TaacQPolicy

__all__ = ['DQNPolicy', 'DiscreteSACPolicy', 'MuZeroPolicy', 'MuZeroReprPolicy', 'PPGPolicy', 'PPOPolicy', 'Policy', 'SACPolicy',
           'SACVPolicy', 'SQILSACPolicy', 'TAACPolicy', 'TaacLPolicy', 'TaacQPolicy']
