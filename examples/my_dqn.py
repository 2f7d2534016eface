# my_dqn.py
"""A minimal DQN (Mnih et al. 2015) with a Polyak-averaged target network, trained off-policy by tidal's
'replay' feed. It registers its own small Q-network."""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

from tidal import MODEL_REGISTRY, POLICY_REGISTRY, Policy
from tidal.models.acting import ActingNetwork


@MODEL_REGISTRY.register('my_q_network')
class QNetwork(nn.Module):
    """One Q-value per action. `obs_shape` and `action_shape` are filled in from the env."""

    def __init__(self, obs_shape: int, action_shape: int, hidden_size: int = 64):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(obs_shape, hidden_size), nn.ReLU(),
                                 nn.Linear(hidden_size, hidden_size), nn.ReLU(),
                                 nn.Linear(hidden_size, action_shape))

    def forward(self, obs):
        return self.net(obs)


class GreedyAction(nn.Module):
    """The eval mode's action in plain tensor ops, for `tidal export`: the argmax of the Q-values."""

    def __init__(self, q_network: nn.Module):
        super().__init__()
        self.q_network = q_network

    def forward(self, obs):
        return self.q_network(obs).argmax(dim=1)


@POLICY_REGISTRY.register('my_dqn')
class DQNPolicy(Policy):
    config = dict(
        type='my_dqn',
        random_collect_size=1000,  # redefined defaults keep the rules of Policy's comments
        learn=dict(
            batch_size=64,
            # (float > 0) Adam learning rate.
            learning_rate=1e-3,
            # (float in [0, 1]) Discount factor gamma.
            discount_factor=0.99,
            # (float in (0, 1]) Polyak factor: the target network moves this far to the network per update.
            target_theta=0.01,
        ),
        collect=dict(
            # (float in [0, 1]) Probability of a uniformly random action while collecting.
            epsilon=0.1,
        ),
        other=dict(replay_buffer=dict(replay_buffer_size=50_000)),
    )
    pipeline = 'replay'  # off-policy: transitions go to a replay buffer, each update samples a batch
    action_space = 'discrete'

    @classmethod
    def default_model(cls, cfg):
        return 'my_q_network', []  # registered above, in this module

    # ----- learn mode --------------------------------------------------------------------------
    def _init_learn(self):
        self._optimizer = self.parts.optimizer(
            'optimizer', torch.optim.Adam(self._model.parameters(), lr=self._cfg.learn.learning_rate))
        self._target = self.parts.network('target', copy.deepcopy(self._model).requires_grad_(False))

    def _forward_learn(self, batch):
        learn = self._cfg.learn
        q = self._model(batch['obs']).gather(1, batch['action'].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            next_q = self._target(batch['next_obs']).max(dim=1).values
            alive = 1.0 - batch['terminated'].float()  # a truncated episode still bootstraps
            target = batch['reward'] + learn.discount_factor * alive * next_q
        loss = F.smooth_l1_loss(q, target)
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        with torch.no_grad():
            for param, target_param in zip(self._model.parameters(), self._target.parameters()):
                target_param.lerp_(param, learn.target_theta)
        return {'q_loss': loss.detach(), 'q_value': q.mean().detach()}

    def _monitor_vars_learn(self):
        return ['q_loss', 'q_value']

    # ----- collect mode: epsilon-greedy; the default _process_transition keeps what DQN needs -----
    @torch.no_grad()
    def _forward_collect(self, obs):
        greedy = self._model(obs).argmax(dim=1)
        explore = torch.rand(greedy.shape, device=greedy.device) < self._cfg.collect.epsilon
        return {'action': torch.where(explore, self._random_action(obs)['action'], greedy)}

    def _random_action(self, obs):
        return {'action': torch.randint(self._cfg.model.action_shape, (len(obs),), device=obs.device)}

    # ----- eval mode -----------------------------------------------------------------------------
    @torch.no_grad()
    def _forward_eval(self, obs):
        return {'action': self._model(obs).argmax(dim=1)}

    # ----- export: `tidal export` traces this module and checks it against the eval mode ----------
    def export_actor(self, action_mask=False):
        return ActingNetwork(GreedyAction(self._model))
