"""Network templates; importing this package registers them in MODEL_REGISTRY."""
from tidal.models.actor_critic import ActorCritic, DisjointPolicyValueNetwork
from tidal.models.conv_qac import DiscreteConvQAC
from tidal.models.heads import DiscreteHead, GaussianHead
from tidal.models.mlp import EnsembleLinear, EnsembleMLP, mlp
from tidal.models.maqac import ContinuousMAQAC, DiscreteMAQAC
from tidal.models.muzero import MuZeroModel
from tidal.models.qac import ContinuousQAC, DiscreteQAC
from tidal.models.qvac import ContinuousQVAC, StateValue
from tidal.models.taac import TrajectoryCritic, TrajectoryQAC
from tidal.models.target import TargetNetwork
from tidal.models.temperature import Temperature

__all__ = ['ActorCritic', 'ContinuousMAQAC', 'ContinuousQAC', 'ContinuousQVAC', 'DiscreteConvQAC', 'DiscreteHead',
           'DiscreteMAQAC', 'DiscreteQAC', 'DisjointPolicyValueNetwork', 'EnsembleLinear', 'EnsembleMLP', 'GaussianHead',
           'MuZeroModel', 'StateValue', 'TargetNetwork', 'Temperature', 'TrajectoryCritic', 'TrajectoryQAC', 'mlp']
