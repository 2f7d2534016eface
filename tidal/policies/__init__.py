"""Registered policies; importing this package registers the built-in ones."""
from tidal.policies.a2c import A2CPolicy
from tidal.policies.base import Policy
from tidal.policies.bc import BCPolicy
from tidal.policies.cql import CQLOnlinePolicy, CQLPolicy
from tidal.policies.crossq import CrossQPolicy
from tidal.policies.discrete_cql import DiscreteCQLPolicy
from tidal.policies.discrete_sac import DiscreteSACPolicy
from tidal.policies.dqn import DQNPolicy
from tidal.policies.iql import IQLOnlinePolicy, IQLPolicy
from tidal.policies.muzero import MuZeroPolicy
from tidal.policies.muzero_repr import MuZeroReprPolicy
from tidal.policies.ppg import PPGPolicy
from tidal.policies.ppo import PPOPolicy
from tidal.policies.rebrac import ReBRACPolicy
from tidal.policies.sac import SACPolicy
from tidal.policies.sac_v import SACVPolicy
from tidal.policies.sqil import SQILPolicy
from tidal.policies.sqil_sac import SQILSACPolicy
from tidal.policies.sql import SQLPolicy
from tidal.policies.taac import TAACPolicy, TaacLPolicy, TaacQPolicy
from tidal.policies.td3 import DDPGPolicy, TD3Policy
from tidal.policies.td3_bc import TD3BCPolicy

__all__ = ['A2CPolicy', 'BCPolicy', 'CQLOnlinePolicy', 'CQLPolicy', 'CrossQPolicy', 'DDPGPolicy', 'DQNPolicy', 'DiscreteCQLPolicy', 'DiscreteSACPolicy', 'IQLOnlinePolicy', 'IQLPolicy', 'MuZeroPolicy', 'MuZeroReprPolicy', 'PPGPolicy',
           'PPOPolicy', 'Policy', 'ReBRACPolicy', 'SACPolicy', 'SACVPolicy', 'SQILPolicy', 'SQILSACPolicy', 'SQLPolicy', 'TAACPolicy',
           'TD3BCPolicy', 'TD3Policy', 'TaacLPolicy', 'TaacQPolicy']
