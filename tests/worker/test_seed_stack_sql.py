"""SeedStack over SQL and SQIL: each seed's stacked update (soft target, plain and double, n-step windows, SQIL's
relabelling and its two halves' TD errors) equals its update alone, and the seeds' Boltzmann collection and greedy
evaluation, acted for all seeds at once, equal each seed's own draw for draw."""
from __future__ import annotations

import pytest
import torch

from tidal.policies import SQILPolicy, SQLPolicy

from seed_stacking import SEEDS, policies, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)
from test_seed_acting import stacked_against_own  # noqa: E402
from test_seed_stack_dqn import nstep_cartpole_batch  # noqa: E402
from test_seed_stack_sac_family import ROWS, TOL, assert_same_learn_state, cartpole_batch, float64  # noqa: F401


@pytest.mark.parametrize('make_batch', [cartpole_batch, nstep_cartpole_batch], ids=['one_step', 'nstep'])
@pytest.mark.parametrize('double_q', [False, True])
def test_stacked_sql_updates_equal_each_seed_alone(make_batch, double_q):
    assert SQLPolicy.plans_updates()
    alone, group, infos, stacked = run_alone_and_stacked('cartpole_sql', make_batch, [
        'policy.learn.target_update_freq=4', f'policy.learn.double_q={double_q}'])
    assert_same_learn_state(alone, group, ('model', 'target', 'optimizer'))
    for seed in range(len(SEEDS)):
        for key in ('total_loss', 'q_value', 'target_q_value', 'td_error'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    assert len({round(float(info['total_loss']), 4) for info in infos}) == len(SEEDS)  # the seeds learnt apart


def half_expert_batch(generator):
    return {**nstep_cartpole_batch(generator), 'expert': torch.arange(ROWS) % 2 == 0}


def test_stacked_sqil_updates_equal_each_seed_alone_and_report_each_half():
    assert SQILPolicy.plans_updates()
    alone, group, infos, stacked = run_alone_and_stacked('cartpole_sqil', half_expert_batch)
    assert_same_learn_state(alone, group, ('model', 'target', 'optimizer'))
    for seed in range(len(SEEDS)):
        for key in ('total_loss', 'target_q_value', 'agent_td_error', 'expert_td_error'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)


@pytest.mark.parametrize('deterministic', [True, False])
def test_stacked_collect_and_eval_forwards_equal_each_seeds_own(deterministic):
    overrides = [f'policy.eval.deterministic={deterministic}', 'policy.other.eps.start=0.5']
    group, alone = policies('cartpole_sql', overrides), policies('cartpole_sql', overrides)
    obs = [torch.randn(64, 4, generator=torch.Generator().manual_seed(10 + seed)) for seed in SEEDS]
    for seed, policy in enumerate(alone):  # a sampling evaluation draws from the seed's own eval generator
        policy.eval_mode.seed(seed)  # as the group draws for seed s from a generator seeded s
    for mode in ('collect', 'eval'):
        actor = stacked_against_own(group, alone, mode, obs)
        assert actor.why_per_seed is None and actor.checked
