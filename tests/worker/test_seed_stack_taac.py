"""SeedStack runs the TAAC family's update (one stage over critics, actor and both temperatures, then the Polyak
update) for every seed at once, and each seed ends where its update alone takes it."""
from __future__ import annotations

import pytest
import torch

from tidal.policies.taac import TAACPolicy, TaacLPolicy, TaacQPolicy

from seed_stacking import SEEDS, policies, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)

TOL = 1e-5
MONITORS = ('critic_loss', 'twin_critic_loss', 'policy_loss', 'alpha', 'switch_alpha', 'alpha_loss', 'entropy',
            'switch_entropy', 'switch_prob', 'train_switch_rate', 'target_q_value')


def taac_batch(generator, size, rows=16, length=4):
    """A replayed batch of sequences of Pendulum's shapes (3 observation, 1 action dimensions) with trajectories
    of `size` components, as the TAAC loss reads it."""
    prev_tau = torch.rand(rows, length, size, 1, generator=generator) * 2 - 1
    return dict(obs=torch.randn(rows, length, 3, generator=generator),
                next_obs=torch.randn(rows, length, 3, generator=generator),
                prev_tau=prev_tau, tau=torch.rand(rows, length, size, 1, generator=generator) * 2 - 1,
                reward=torch.randn(rows, length, generator=generator),
                terminated=torch.rand(rows, length, generator=generator) < 0.1,
                truncated=torch.zeros(rows, length, dtype=torch.bool),
                switch=torch.rand(rows, length, generator=generator) < 0.5,
                step_type=torch.randint(0, 3, (rows, length), generator=generator).to(torch.int8))


def test_taac_family_plans_its_updates():
    assert all(cls.plans_updates() for cls in (TAACPolicy, TaacLPolicy, TaacQPolicy))


@pytest.mark.parametrize('config', ['pendulum_taac', 'pendulum_taac_q'])
def test_stacked_taac_updates_equal_each_seed_alone(config):
    overrides = ['policy.model.actor_hidden_sizes=[32,32]', 'policy.model.critic_hidden_sizes=[32,32]']
    size = policies(config, overrides, seeds=(0,))[0]._trajectory.size
    count = len(SEEDS)

    def same_monitors(infos, stacked):
        for seed in range(count):
            for key in MONITORS:
                assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    alone, group, infos, _ = run_alone_and_stacked(config, lambda generator: taac_batch(generator, size), overrides,
                                                   each_round=same_monitors)
    for seed in range(count):
        mine, theirs = group[seed].learn_mode.state_dict(), alone[seed].learn_mode.state_dict()
        for part in ('model', 'target_critic', 'temperature', 'switch_temperature'):
            for key, value in theirs[part].items():
                assert torch.allclose(mine[part][key], value, atol=TOL, rtol=0), (seed, part, key)
        for index, state in theirs['optimizer']['state'].items():
            for name in ('exp_avg', 'exp_avg_sq'):
                assert torch.allclose(mine['optimizer']['state'][index][name], state[name], atol=TOL, rtol=0)
    assert len({round(float(info['critic_loss']), 4) for info in infos}) == count  # the seeds learnt apart
