"""SeedStack over the SAC variants sac_v (a V stage before the critics, a Polyak-averaged target V) and
discrete_sac (exact expectations over actions, nothing drawn): each seed's stacked update equals its update alone."""
from __future__ import annotations

import pytest
import torch

from tidal.base.nest import tree_leaves
from tidal.policies.discrete_sac import DiscreteSACPolicy
from tidal.policies.sac_v import SACVPolicy

from seed_stacking import SEEDS, pendulum_batch, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)

ROWS = 64
TOL = 1e-5


@pytest.fixture(autouse=True)
def float64():
    """The comparisons run in float64. In float32 the vmapped (batched) matmuls round differently from a seed's own,
    and Adam's normalised step turns that rounding into whole steps of lr on gradient elements near zero: after 20
    sac_v updates with a fixed alpha one critic weight of one seed was 4e-5 apart, its losses 1e-6 (in float64
    every weight is equal). The loss functions are the same in both dtypes."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def cartpole_batch(generator):
    """A replay batch of CartPole's shapes (4 observation dimensions, 2 discrete actions)."""
    return dict(obs=torch.randn(ROWS, 4, generator=generator),
                action=torch.randint(0, 2, (ROWS,), generator=generator),
                reward=torch.randn(ROWS, generator=generator),
                next_obs=torch.randn(ROWS, 4, generator=generator),
                terminated=torch.rand(ROWS, generator=generator) < 0.1,
                truncated=torch.zeros(ROWS, dtype=torch.bool))


def tensors_of(state):
    """Every tensor of a nested learn state (model, target networks, temperature, optimizer moments) by path."""
    return {path: leaf for path, leaf in tree_leaves(state, sequences=True) if isinstance(leaf, torch.Tensor)}


def assert_same_learn_state(alone, group, parts):
    for seed, (a, g) in enumerate(zip(alone, group)):
        theirs, mine = a.learn_mode.state_dict(), g.learn_mode.state_dict()
        assert set(parts) <= theirs.keys()
        theirs_tensors, mine_tensors = tensors_of(theirs), tensors_of(mine)
        assert theirs_tensors.keys() == mine_tensors.keys()
        for key, value in theirs_tensors.items():
            assert torch.allclose(mine_tensors[key].double(), value.double(), atol=TOL, rtol=0), \
                (seed, key, (mine_tensors[key].double() - value.double()).abs().max())


def assert_same_losses(infos, stacked, keys):
    for seed in range(len(SEEDS)):
        for key in keys:
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=TOL), (seed, key)
    assert len({round(float(info['critic_loss']), 4) for info in infos}) == len(SEEDS)  # the seeds learnt apart


def test_sac_family_plans_its_updates():
    assert SACVPolicy.plans_updates()
    assert DiscreteSACPolicy.plans_updates()


@pytest.mark.parametrize('overrides', [(), ('policy.learn.auto_alpha=True',)], ids=['fixed_alpha', 'auto_alpha'])
def test_stacked_sac_v_updates_equal_each_seed_alone(overrides):
    """Three stages (V, the critics, the actor with the temperature), the noise of the V target's action and of the
    actor's action drawn in the plan from each seed's stream, the Polyak update of the target V."""
    alone, group, infos, stacked = run_alone_and_stacked('pendulum_sac_v', pendulum_batch, overrides)
    assert type(group[0]).plans_updates()
    assert_same_learn_state(alone, group, ('model', 'target_value', 'temperature', 'optimizer_value'))
    keys = ['critic_loss', 'twin_critic_loss', 'policy_loss', 'alpha', 'entropy', 'value_loss', 'v_value',
            'target_v_value', 'q_value', 'target_q_value', 'td_error']
    assert_same_losses(infos, stacked, keys + (['alpha_loss'] if overrides else []))


def test_stacked_discrete_sac_updates_equal_each_seed_alone():
    """The critics, then the actor with the temperature (auto alpha), the target critics Polyak-averaged."""
    alone, group, infos, stacked = run_alone_and_stacked('cartpole_discrete_sac', cartpole_batch)
    assert type(group[0]).plans_updates()
    assert_same_learn_state(alone, group, ('model', 'target_critic', 'temperature'))
    assert_same_losses(infos, stacked, ['critic_loss', 'twin_critic_loss', 'policy_loss', 'alpha', 'alpha_loss',
                                        'entropy', 'q_value', 'target_q_value', 'td_error'])
