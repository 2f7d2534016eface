"""SeedStack over TD3 and DDPG: each seed's stacked update (the smoothed twin-critic target, the delayed actor steps,
the Polyak-averaged target actor and critics) equals its update alone."""
from __future__ import annotations

import pytest

from tidal.policies import TD3Policy

from seed_stacking import SEEDS, pendulum_batch, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)
from test_seed_stack_sac_family import TOL, assert_same_learn_state, float64  # noqa: F401


@pytest.mark.parametrize('config', ['pendulum_td3', 'pendulum_ddpg'])
def test_stacked_td3_and_ddpg_updates_equal_each_seed_alone(config):
    assert TD3Policy.plans_updates()
    # 20 rounds: ten of TD3's delayed actor steps, every one of DDPG's
    small = ['policy.model.actor_hidden_sizes=[32]', 'policy.model.critic_hidden_sizes=[32]']
    alone, group, infos, stacked = run_alone_and_stacked(config, pendulum_batch, small)
    assert_same_learn_state(alone, group, ('model', 'target', 'optimizer_actor', 'optimizer_critic'))
    for seed in range(len(SEEDS)):
        for key in ('critic_loss', 'actor_loss', 'q_value', 'target_q_value', 'td_error'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    assert len({round(float(info['critic_loss']), 4) for info in infos}) == len(SEEDS)  # the seeds learnt apart
