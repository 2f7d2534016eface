"""SeedStack over DQN: each seed's stacked update (double-Q target, the target network copied on schedule, n-step
windows) equals its update alone."""
from __future__ import annotations

import pytest
import torch

from tidal.policies import DQNPolicy

from seed_stacking import SEEDS, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)
from test_seed_stack_sac_family import ROWS, TOL, assert_same_learn_state, cartpole_batch, float64  # noqa: F401


def nstep_cartpole_batch(generator):
    """A CartPole batch extended to 3-step windows of lengths 1 to 3."""
    batch = cartpole_batch(generator)
    length = torch.randint(1, 4, (ROWS,), generator=generator)
    inside = torch.arange(3) < length[:, None]
    return {**batch, 'nstep_reward': torch.randn(ROWS, 3, generator=generator) * inside, 'nstep_len': length}


@pytest.mark.parametrize('make_batch', [cartpole_batch, nstep_cartpole_batch], ids=['one_step', 'nstep'])
def test_stacked_dqn_updates_equal_each_seed_alone(make_batch):
    assert DQNPolicy.plans_updates()
    # the target network is copied every 4 updates, so the 20 rounds cross five copies
    alone, group, infos, stacked = run_alone_and_stacked('cartpole_dqn', make_batch,
                                                         ['policy.learn.target_update_freq=4'])
    assert_same_learn_state(alone, group, ('model', 'target', 'optimizer'))
    for seed in range(len(SEEDS)):
        for key in ('total_loss', 'q_value', 'target_q_value', 'td_error'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    assert len({round(float(info['total_loss']), 4) for info in infos}) == len(SEEDS)  # the seeds learnt apart
