"""SeedStack: the vmapped update of a seed group equals each seed's update alone, seed by seed."""
from __future__ import annotations

import copy

import pytest
import torch

from tidal.worker.checkpoint import load_checkpoint, save_checkpoint
from tidal.worker.seed_stack import SeedStack

from seed_stacking import SEEDS, pendulum_batch, policies, run_alone_and_stacked  # noqa: E402  (tests/worker is on the import path)

BATCH = 64
TOL = 1e-5


def ppo_batch(gen, env_step):
    return {
        'obs': torch.randn(BATCH, 4, generator=gen),
        'action': torch.randint(0, 2, (BATCH,), generator=gen),
        'log_prob': -0.69 + 0.1 * torch.randn(BATCH, generator=gen),
        'value': torch.randn(BATCH, generator=gen),
        'advantage': torch.randn(BATCH, generator=gen),
        'return': torch.randn(BATCH, generator=gen),
        'env_step': env_step,
    }


def aux_batch(gen, env_step):
    return {'obs': torch.randn(BATCH, 4, generator=gen), 'return': 2 * torch.randn(BATCH, generator=gen),
            'env_step': env_step}


def batches_for(round_index, make, seeds=SEEDS):
    """Each seed's own batch of one round (different per seed, the same in the alone and the group runs)."""
    gen = torch.Generator().manual_seed(1000 * round_index + 7)
    return [make(gen, 512 * round_index) for _ in seeds]


def weights(policy):
    return {f'{name}.{key}': tensor.detach().clone() for name, module in policy.parts.stacked().items()
            for key, tensor in [*module.named_parameters(), *module.named_buffers()]}


def assert_same_weights(a, b, tol=TOL):
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for key in wa:
        assert torch.allclose(wa[key], wb[key], atol=tol, rtol=0), (key, (wa[key] - wb[key]).abs().max())


def assert_same_infos(alone, group, keys):
    for key in keys:
        assert abs(float(alone[key]) - float(group[key])) <= TOL, (key, float(alone[key]), float(group[key]))


def run_both(overrides=(), rounds=20):
    alone, group = policies('cartpole_ppo', overrides), policies('cartpole_ppo', overrides)
    for a, g in zip(alone, group):
        assert_same_weights(a, g, 0.0)  # built from the same seeds
    first = [next(iter(p._model.parameters())) for p in alone[:2]]
    assert not torch.equal(*first)  # the seeds start apart
    stack = SeedStack(group)
    alone_infos, group_infos = [], []
    for r in range(rounds):
        batches = batches_for(r, ppo_batch)
        alone_infos.append([p.learn_mode.forward(b) for p, b in zip(alone, batches)])
        group_infos.append(stack.update([p.learn_mode.plan(b) for p, b in zip(group, batches)], batches))
    return alone, group, stack, alone_infos, group_infos


def test_stacked_ppo_updates_equal_each_seed_alone():
    alone, group, _, alone_infos, group_infos = run_both()
    for a, g in zip(alone, group):
        assert_same_weights(a, g)
    # the updates moved the weights far more than the tolerance
    start, end = weights(policies('cartpole_ppo', seeds=(0,))[0]), weights(group[0])
    assert max((end[k] - start[k]).abs().max().item() for k in start) > 1e-2
    for a_round, g_round in zip(alone_infos, group_infos):
        for a_info, g_info in zip(a_round, g_round):
            assert_same_infos(a_info, g_info, ['total_loss', 'grad_norm', 'policy_loss', 'value_loss'])
    # the seeds differ from one another: each got its own update
    assert abs(float(group_infos[-1][0]['total_loss']) - float(group_infos[-1][1]['total_loss'])) > 1e-4


def test_gradient_clipping_is_per_seed():
    clip = 0.05
    alone, group, _, alone_infos, group_infos = run_both([f'policy.learn.grad_clip_norm={clip}'], rounds=10)
    assert alone[0]._cfg.learn.grad_clip_norm == clip
    norms = [[float(info['grad_norm']) for info in round_infos] for round_infos in group_infos]
    # clipping is active for every seed, and the seeds' norms differ (a global norm would scale them alike)
    assert min(min(n) for n in norms) > 4 * clip
    assert len({round(n, 4) for n in norms[0]}) == len(SEEDS)
    for a, g in zip(alone, group):
        assert_same_weights(a, g)
    for a_round, g_round in zip(alone_infos, group_infos):
        for a_info, g_info in zip(a_round, g_round):
            assert_same_infos(a_info, g_info, ['total_loss', 'grad_norm', 'policy_loss'])


def test_grad_clip_norm_none_leaves_each_seeds_gradient_unclipped():
    alone, group, _, alone_infos, group_infos = run_both(['policy.learn.grad_clip_norm=null'], rounds=5)
    assert alone[0]._cfg.learn.grad_clip_norm is None
    # the default clip (0.5) would have cut these norms; alone, None is clip_grad_norm_ at inf
    assert max(float(info['grad_norm']) for round_infos in group_infos for info in round_infos) > 0.5
    for a, g in zip(alone, group):
        assert_same_weights(a, g)
    for a_round, g_round in zip(alone_infos, group_infos):
        for a_info, g_info in zip(a_round, g_round):
            assert_same_infos(a_info, g_info, ['total_loss', 'grad_norm'])


def test_seed_state_dict_is_a_single_seed_state(tmp_path):
    alone, group, _, _, _ = run_both(rounds=5)
    for seed, (a, g) in enumerate(zip(alone, group)):
        # through a checkpoint file, as a run saves and resumes it
        path = save_checkpoint({'policy': g.learn_mode.state_dict()}, tmp_path / f'seed_{seed}.pt')
        state = load_checkpoint(path)['policy']
        fresh = policies('cartpole_ppo', seeds=(100 + seed,))[0]
        fresh.learn_mode.load_state_dict(state)
        assert_same_weights(a, fresh)
        a_state, f_state = a._optimizer.state_dict()['state'], fresh._optimizer.state_dict()['state']
        assert a_state.keys() == f_state.keys() and len(a_state) > 0
        for index in a_state:
            assert float(a_state[index]['step']) == float(f_state[index]['step']) == 5
            for name in ('exp_avg', 'exp_avg_sq'):
                assert f_state[index][name].shape == a_state[index][name].shape  # no seed dimension
                assert torch.allclose(a_state[index][name], f_state[index][name], atol=TOL, rtol=0), (index, name)
        # the loaded policy goes on exactly as the alone one
        batch = batches_for(99, ppo_batch)[seed]
        assert_same_infos(a.learn_mode.forward(batch), fresh.learn_mode.forward(batch), ['total_loss', 'grad_norm'])
        assert_same_weights(a, fresh)


def test_released_seed_is_left_alone():
    group = policies('cartpole_ppo')
    stack = SeedStack(group)
    batches = batches_for(0, ppo_batch)
    stack.update([p.learn_mode.plan(b) for p, b in zip(group, batches)], batches)
    stack.release(1)
    before = [weights(p) for p in group]
    moments = {i: s['exp_avg'].clone() for i, s in group[1]._optimizer.state_dict()['state'].items()}
    for r in range(1, 4):
        batches = batches_for(r, ppo_batch)
        plans = [None if seed == 1 else p.learn_mode.plan(b) for seed, (p, b) in enumerate(zip(group, batches))]
        infos = stack.update(plans, [None if seed == 1 else b for seed, b in enumerate(batches)])
        assert infos[1] is None and infos[0] is not None and infos[2] is not None
    after = [weights(p) for p in group]
    for key in before[1]:
        assert torch.equal(before[1][key], after[1][key]), key
    for index, state in group[1]._optimizer.state_dict()['state'].items():
        assert torch.equal(state['exp_avg'], moments[index])
    for seed in (0, 2):
        assert any(not torch.equal(before[seed][k], after[seed][k]) for k in before[seed])
    # the released seed can still learn alone, without touching the others
    kept = weights(group[0])
    group[1].learn_mode.forward(batches_for(9, ppo_batch)[1])
    assert any(not torch.equal(after[1][k], weights(group[1])[k]) for k in after[1])
    assert all(torch.equal(kept[k], weights(group[0])[k]) for k in kept)


def test_checkpoint_of_one_seed_holds_only_its_own_slice(tmp_path):
    group = policies('cartpole_ppo', seeds=tuple(range(8)))
    stack = SeedStack(group)
    batches = batches_for(0, ppo_batch, seeds=range(8))
    stack.update([p.learn_mode.plan(b) for p, b in zip(group, batches)], batches)
    state = {'policy': group[3].learn_mode.state_dict()}
    viewing = save_checkpoint(state, tmp_path / 'view.pt')
    cloned = save_checkpoint({'policy': {k: v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
                                         for k, v in group[3].learn_mode.state_dict().items()}},
                             tmp_path / 'clone.pt')
    sizes = viewing.stat().st_size, cloned.stat().st_size
    assert abs(sizes[0] - sizes[1]) <= 0.03 * sizes[1], sizes
    # the state saved is still the seed's own, and saving left the stack in place
    weight = next(iter(group[3]._model.parameters()))
    assert weight.untyped_storage().nbytes() > weight.numel() * weight.element_size()


def test_stacked_ppg_aux_updates_equal_each_seed_alone():
    overrides = ['policy.aux.interval=2']
    alone, group = policies('cartpole_ppg', overrides), policies('cartpole_ppg', overrides)
    assert 'old_model' in group[0].parts.stacked()
    stack = SeedStack(group)
    # pi_old frozen first, then policy-phase updates move the policy away from it: the KL term of the aux
    # loss has gradients well above rounding (at pi == pi_old Adam would magnify rounding noise of a zero gradient)
    for p in [*alone, *group]:
        p.aux_mode.reset()
    for r in range(3):
        batches = batches_for(r, ppo_batch)
        for p, b in zip(alone, batches):
            p.learn_mode.forward(b)
        stack.update([p.learn_mode.plan(b) for p, b in zip(group, batches)], batches)
    for a, g in zip(alone, group):
        assert_same_weights(a, g)
    kls = []
    for r in range(3, 8):
        batches = batches_for(r, aux_batch)
        alone_infos = [p.aux_mode.forward(b) for p, b in zip(alone, batches)]
        group_infos = stack.update([p.aux_mode.plan(b) for p, b in zip(group, batches)], batches)
        for a_info, g_info in zip(alone_infos, group_infos):
            assert_same_infos(a_info, g_info, ['aux_total_loss', 'aux_grad_norm', 'aux_value_loss', 'aux_policy_kl'])
        kls.append([float(info['aux_policy_kl']) for info in group_infos])
    assert min(kls[0]) > 1e-6, kls  # the KL term is in play
    for a, g in zip(alone, group):
        assert_same_weights(a, g)
        a_state = a._aux_optimizer.state_dict()['state']
        g_state = g._aux_optimizer.state_dict()['state']
        for index in a_state:
            assert torch.allclose(a_state[index]['exp_avg'], g_state[index]['exp_avg'], atol=TOL, rtol=0)


def test_stacked_sac_updates_equal_each_seed_alone():
    """Two stages (critics, then actor and temperature), reparameterization noise drawn in the plan from each
    seed's own generator, the temperature's scalar parameter and the Polyak update of the target critics."""
    count = len(SEEDS)
    alone, group, infos, stacked = run_alone_and_stacked('pendulum_sac', pendulum_batch)
    for seed in range(count):
        mine, theirs = group[seed].learn_mode.state_dict(), alone[seed].learn_mode.state_dict()
        for part in ('model', 'target_critic', 'temperature'):
            for key, value in theirs[part].items():
                assert torch.allclose(mine[part][key], value, atol=1e-5, rtol=0), (seed, part, key)
        for key in ('critic_loss', 'twin_critic_loss', 'policy_loss', 'alpha', 'alpha_loss', 'entropy'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=1e-5), (seed, key)
    assert len({round(float(info['critic_loss']), 4) for info in infos}) == count  # the seeds learnt apart


def test_stacked_sqil_updates_equal_each_seed_alone_and_report_each_half():
    """SQIL relabels in its plan and measures each half of the batch without boolean indexing, so its update stacks
    (with monitor_cos_similarity off, which a seed group refuses)."""
    overrides = ['policy.learn.monitor_cos_similarity=False']
    alone, group = policies('pendulum_sqil_sac', overrides), policies('pendulum_sqil_sac', overrides)
    stack = SeedStack(group)
    data = [torch.Generator().manual_seed(seed) for seed in SEEDS]
    for _ in range(5):
        batches = []
        for generator in data:
            batch = pendulum_batch(generator)
            batch['expert'] = torch.arange(64) % 2 == 0
            batches.append(batch)
        copies = [dict(batch) for batch in batches]
        torch.manual_seed(3)
        infos = [policy.learn_mode.forward(batch) for policy, batch in zip(alone, batches)]
        torch.manual_seed(3)
        stacked = stack.update([policy.learn_mode.plan(batch) for policy, batch in zip(group, copies)], copies)
    for seed in range(len(SEEDS)):
        for key in ('critic_loss', 'policy_loss', 'agent_td_error', 'expert_td_error'):
            assert float(stacked[seed][key]) == pytest.approx(float(infos[seed][key]), abs=1e-5), (seed, key)
        agent, expert = batches[seed]['expert'].logical_not(), batches[seed]['expert']
        assert float(infos[seed]['agent_td_error']) == pytest.approx(float(infos[seed]['priority'][agent].mean()))
        assert float(infos[seed]['expert_td_error']) == pytest.approx(float(infos[seed]['priority'][expert].mean()))


class AsideTemperature:
    """SAC's temperature read through its tensor kept in an attribute, not through the module a seed group stacks."""

    def __init__(self, module):
        self.module, self.raw, self.auto = module, module.raw, module.auto

    @property
    def value(self):
        return self.raw.detach().exp()

    def loss(self, log_prob, target_entropy):
        return -(self.raw * (log_prob.detach() + target_entropy)).mean()

    def clamp_(self):
        pass


def test_a_tensor_read_beside_its_declared_module_stops_the_first_stacked_update_in_one_line():
    from tidal.base.errors import ConfigError
    from tidal.entry.setup import load_config
    from tidal.policies.sac import SACPolicy
    from tidal.worker.builders import set_seed

    class AsideSAC(SACPolicy):
        def _init_learn(self):
            super()._init_learn()
            self._temperature = AsideTemperature(self._temperature)
    cfg = load_config('pendulum_sac', overrides=['policy.model.actor_hidden_sizes=[16]',
                                                 'policy.model.critic_hidden_sizes=[16]'])
    group = []
    for seed in (0, 1):
        set_seed(seed)
        group.append(AsideSAC(copy.deepcopy(cfg.policy)))
    stack = SeedStack(group)
    batches = [pendulum_batch(torch.Generator().manual_seed(seed)) for seed in (0, 1)]
    plans = [policy.learn_mode.plan(batch) for policy, batch in zip(group, batches)]
    with pytest.raises(ConfigError, match=r"stacked update does not reach 'temperature.raw', which the seed's own "
                                          r"update reaches: its loss reads that tensor other than through"):
        stack.update(plans, batches)
