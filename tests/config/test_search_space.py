"""The search spaces of `tidal tune`: each family's ranges are valid values of its policies' keys."""
from __future__ import annotations

import pytest

from tidal.config.layered import load_layered
from tidal.config.search_space import FAMILY_SPACES, Param, family_space, parse_param, without_keys


def _ends(param: Param) -> tuple[object, object]:
    """The two extreme values of a range: its bounds, or its first and last choices."""
    if param.kind == 'categorical':
        return param.choices[0], param.choices[-1]
    return param.low, param.high


@pytest.mark.parametrize('zoo_name', ['pendulum_sac', 'cartpole_discrete_sac', 'cartpole_dqn', 'pendulum_sac_v',
                                      'cartpole_ppo', 'cartpole_ppg', 'cartpole_a2c', 'pendulum_taac',
                                      'pendulum_taac_q', 'pendulum_td3', 'pendulum_ddpg', 'cartpole_sql'])
def test_every_family_range_ends_pass_the_config_checks_of_its_zoo_config(zoo_name):
    policy_type = load_layered(zoo_name).cfg.policy.type
    space = family_space([policy_type])
    for end in (0, 1):
        cfg = load_layered(zoo_name, None, [param.override(_ends(param)[end]) for param in space]).cfg
        for param in space:
            node = cfg
            for part in param.key.split('.'):
                node = node[part]
            assert node == _ends(param)[end], param.key


def test_a_derived_policy_type_falls_back_to_its_parents_space_and_keys_set_by_hand_leave_it():
    assert family_space(['my_ppo', 'ppo']) is FAMILY_SPACES['ppo']
    kept = without_keys(FAMILY_SPACES['ppo'], ['policy.learn.batch_size=64', 'env.collector_env_num=2'])
    assert [param.key for param in kept] == [param.key for param in FAMILY_SPACES['ppo']
                                             if param.key != 'policy.learn.batch_size']


def test_a_space_entry_reads_back_as_the_range_it_wrote():
    for param in FAMILY_SPACES['ppg']:
        assert parse_param(param.key, param.as_spec(), 'here') == param
    assert parse_param('k', {'type': 'int', 'low': 2, 'high': 10, 'step': 2}, 'here') == Param('k', 'int', 2, 10,
                                                                                             step=2)
