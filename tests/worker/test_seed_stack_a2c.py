"""SeedStack over A2C: each seed's stacked update (policy gradient, value regression, entropy bonus, clipped gradient,
Adam with DI-engine's betas) equals its update alone."""
from __future__ import annotations

import pytest
import torch

from tidal.policies import A2CPolicy

from seed_stacking import SEEDS, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)
from test_seed_stack_sac_family import ROWS, TOL, assert_same_learn_state, float64  # noqa: F401


def rollout_batch(generator):
    """A minibatch of a CartPole rollout as A2C learns from it: advantages, returns and collection's values."""
    return dict(obs=torch.randn(ROWS, 4, generator=generator), action=torch.randint(0, 2, (ROWS,), generator=generator),
                advantage=torch.randn(ROWS, generator=generator), value=torch.randn(ROWS, generator=generator),
                **{'return': 2 * torch.randn(ROWS, generator=generator)})


@pytest.mark.parametrize('overrides', [[], ['policy.learn.adv_norm=true', 'policy.learn.betas=[0.0,0.99]']],
                         ids=['defaults', 'adv_norm'])
def test_stacked_a2c_updates_equal_each_seed_alone(overrides):
    assert A2CPolicy.plans_updates()
    alone, group, infos, stacked = run_alone_and_stacked('cartpole_a2c', rollout_batch, overrides)
    assert_same_learn_state(alone, group, ('model', 'optimizer'))
    for seed in range(len(SEEDS)):
        for key in ('total_loss', 'policy_loss', 'value_loss', 'entropy', 'grad_norm'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    assert len({round(float(info['total_loss']), 4) for info in infos}) == len(SEEDS)  # the seeds learnt apart
