"""The learn state that the base class derives from each policy's declared parts: the checkpoint keys of before.

`data/learn_state_keys.json` holds the key paths of every zoo policy's learn state as the code wrote them before
the hooks were derived (issue 37), and of each policy added since as it was first written: checkpoints written
then must still load.
"""
import json
import pathlib

import pytest
import torch

from tidal.entry.setup import load_config
from tidal.worker.builders import build_policy

KEYS = json.loads((pathlib.Path(__file__).parent / 'data' / 'learn_state_keys.json').read_text())
ZOO = {'sac': 'pendulum_sac', 'sac_v': 'pendulum_sac_v', 'discrete_sac': 'cartpole_discrete_sac', 'dqn': 'cartpole_dqn',
       'sql': 'cartpole_sql', 'td3': 'pendulum_td3', 'ddpg': 'pendulum_ddpg', 'masac': 'mpe_spread_sac',
       'ppo': 'cartpole_ppo', 'a2c': 'cartpole_a2c', 'ppg': 'cartpole_ppg', 'taac': 'pendulum_taac',
       'taac_l': 'pendulum_taac_l', 'taac_q': 'pendulum_taac_q', 'sqil_sac': 'pendulum_sqil_sac',
       'sqil': 'cartpole_sqil', 'muzero': 'cartpole_muzero', 'muzero_repr': 'cartpole_muzero_repr_ppo',
       'crossq': 'pendulum_crossq'}


def key_paths(tree, prefix=''):
    if isinstance(tree, dict):
        return [path for key in sorted(tree, key=str) for path in key_paths(tree[key], f'{prefix}/{key}')]
    return [prefix]


def learner(name, seed):
    torch.manual_seed(seed)
    return build_policy(load_config(ZOO[name], seed), enable_field=('learn',))


def leaves(tree):
    if isinstance(tree, dict):
        return [leaf for key in sorted(tree, key=str) for leaf in leaves(tree[key])]
    if isinstance(tree, (list, tuple)):
        return [leaf for item in tree for leaf in leaves(item)]
    return [tree]


@pytest.mark.parametrize('name', sorted(ZOO))
def test_learn_state_keeps_the_checkpoint_keys_of_before_and_loads_into_another_policy(name):
    saved = learner(name, 0).learn_mode.state_dict()
    assert key_paths(saved) == KEYS[name]
    other = learner(name, 1)
    other.learn_mode.load_state_dict(saved)
    for mine, theirs in zip(leaves(other.learn_mode.state_dict()), leaves(saved), strict=True):
        assert torch.equal(mine, theirs) if isinstance(mine, torch.Tensor) else mine == theirs


@pytest.mark.parametrize('name, optimizers', [
    ('sac', ['optimizer_q', 'optimizer_policy']), ('sac_v', ['optimizer_q', 'optimizer_policy', 'optimizer_value']),
    ('td3', ['optimizer_critic', 'optimizer_actor']), ('ppo', ['optimizer']), ('ppg', ['optimizer', 'aux_optimizer']),
])
def test_learn_optimizers_are_those_of_the_learn_state_in_their_order(name, optimizers):
    policy = learner(name, 0)
    parts = policy.parts.learn_state()
    assert policy.learn_optimizers() == [parts[key] for key in optimizers]
