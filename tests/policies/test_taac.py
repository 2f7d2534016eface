"""TAAC, TaacL and TaacQ: trajectory state in collect / eval mode, sequence learning, checkpoints, config errors."""
import math
import re
from types import SimpleNamespace

import pytest
import torch
from torch.testing import assert_close

import tidal.policies.taac as taac_module
from tidal.base.errors import ConfigError
from tidal.policies import TAACPolicy, TaacLPolicy, TaacQPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.rl_utils import StepType
from tidal.rl_utils.trajectory import LinearTrajectory, QuadraticTrajectory
from tidal.worker.checkpoint import load_checkpoint, save_checkpoint

FAMILIES = [TAACPolicy, TaacLPolicy, TaacQPolicy]
SIZES = {TAACPolicy: 1, TaacLPolicy: 2, TaacQPolicy: 3}  # trajectory components K


def make_taac(cls=TAACPolicy, trajectory=None, collect=None, eval=None, model=None, **learn):
    cfg = cls.default_config()
    cfg.model.update(obs_shape=3, action_shape=2, actor_hidden_sizes=[16, 16], critic_hidden_sizes=[16, 16])
    cfg.model.update(model or {})
    cfg.learn.update(learn)
    cfg.collect.update(collect or {})
    cfg.eval.update(eval or {})
    cfg.trajectory.update(trajectory or {})
    return cls(cfg)


def sequence_batch(size, num=8, length=4, reward=None):
    """A replayed batch of `num` sequences of `length` steps, trajectories with `size` components."""
    generator = torch.Generator().manual_seed(0)
    shape = (num, length)
    return dict(
        obs=torch.randn(*shape, 3, generator=generator),
        next_obs=torch.randn(*shape, 3, generator=generator),
        action=torch.rand(*shape, 2, generator=generator) * 2 - 1,
        prev_tau=torch.rand(*shape, size, 2, generator=generator) * 2 - 1,
        tau=torch.rand(*shape, size, 2, generator=generator) * 2 - 1,
        switch=torch.rand(*shape, generator=generator) < 0.5,
        step_type=torch.full(shape, int(StepType.MID), dtype=torch.int8),
        reward=torch.randn(*shape, generator=generator) if reward is None else reward(shape, generator),
        terminated=torch.rand(*shape, generator=generator) < 0.1,
        truncated=torch.zeros(shape, dtype=torch.bool),
    )


def fixed_switch(value):
    """A stand-in for the sampled switch: always `value`."""
    return lambda probs: torch.full((probs.shape[0], ), value, dtype=torch.bool)


# ----- registration and defaults -----------------------------------------------------------------

def test_taac_policies_are_registered_under_their_names():
    assert POLICY_REGISTRY.get('taac') is TAACPolicy
    assert POLICY_REGISTRY.get('taac_l') is TaacLPolicy
    assert POLICY_REGISTRY.get('taac_q') is TaacQPolicy


def test_only_linear_and_quadratic_trajectories_have_an_inverse_mode():
    assert 'inverse_mode' not in TAACPolicy.default_config().trajectory
    assert TaacLPolicy.default_config().trajectory.inverse_mode is True
    assert TaacQPolicy.default_config().trajectory.inverse_mode is True
    for cls, name in zip(FAMILIES, ('taac', 'taac_l', 'taac_q')):
        cfg = cls.default_config()
        assert cfg.type == name and cfg.collect.unroll_len == 4
        assert cfg.trajectory.max_repeat_steps == 0 and cfg.trajectory.randomize_first_state_tau is False


@pytest.mark.parametrize('cls', FAMILIES)
def test_model_trajectory_size_follows_the_family(cls):
    policy = make_taac(cls)
    assert policy.model.trajectory_size == SIZES[cls]


def test_inverse_mode_false_reaches_the_trajectory():
    assert make_taac(TaacLPolicy, trajectory=dict(inverse_mode=False))._trajectory.inverse_mode is False
    assert make_taac(TaacQPolicy)._trajectory.inverse_mode is True


# ----- collect mode: each env's trajectory --------------------------------------------------------

@pytest.mark.parametrize('cls', FAMILIES)
def test_collect_forward_returns_action_trajectories_and_switch(cls):
    policy = make_taac(cls)
    policy.collect_mode.reset(None)
    out = policy.collect_mode.forward(torch.randn(3, 3))
    k = SIZES[cls]
    assert out['action'].shape == (3, 2) and out['action'].abs().max() <= 1.0
    assert out['prev_tau'].shape == (3, k, 2) and not out['prev_tau'].any()  # episodes start at zeros
    assert out['tau'].shape == (3, k, 2)
    assert out['switch'].shape == (3, ) and out['switch'].dtype == torch.bool
    assert torch.equal(out['action'], out['tau'][:, 0])


@pytest.mark.parametrize('cls', FAMILIES)
def test_next_prev_tau_is_the_last_tau_and_reset_zeroes_only_the_given_envs(cls):
    torch.manual_seed(0)
    policy = make_taac(cls, trajectory=dict(max_repeat_steps=1))  # every env switches from step 2 on
    policy.collect_mode.reset(None)
    policy.collect_mode.forward(torch.randn(3, 3))
    first = policy.collect_mode.forward(torch.randn(3, 3))
    taken = first['tau'].clone()
    assert taken.abs().sum(dim=(1, 2)).gt(0).all()  # fresh actions: nonzero in every env
    second = policy.collect_mode.forward(torch.randn(3, 3))
    assert torch.equal(second['prev_tau'], taken)
    kept = second['tau'].clone()
    policy.collect_mode.reset([1])
    third = policy.collect_mode.forward(torch.randn(3, 3))
    assert not third['prev_tau'][1].any()
    assert torch.equal(third['prev_tau'][[0, 2]], kept[[0, 2]])


def test_reset_after_a_step_leaves_that_steps_outputs_unchanged(monkeypatch):
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(True))
    policy = make_taac()
    policy.collect_mode.reset(None)
    out = policy.collect_mode.forward(torch.randn(3, 3))
    action, tau = out['action'].clone(), out['tau'].clone()
    policy.collect_mode.reset([1])  # what the collector does after env 1's episode ended, before storing
    assert torch.equal(out['tau'], tau)
    assert torch.equal(out['action'], action)


@pytest.mark.parametrize('cls', FAMILIES)
def test_randomized_first_trajectory_is_nonzero_and_in_range(cls):
    torch.manual_seed(0)
    policy = make_taac(cls, trajectory=dict(randomize_first_state_tau=True))
    policy.collect_mode.reset(None)
    start = policy.collect_mode.forward(torch.randn(4, 3))['prev_tau']
    assert start.shape == (4, SIZES[cls], 2)
    assert start.ne(0).all() and start.abs().max() <= 1.0
    # eval mode always starts from zeros
    assert not policy.eval_mode.forward(torch.randn(4, 3))['prev_tau'].any()


def test_kept_constant_trajectory_repeats_the_action(monkeypatch):
    policy = make_taac(TAACPolicy)
    policy.collect_mode.reset(None)
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(True))
    switched = policy.collect_mode.forward(torch.randn(3, 3))
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(False))
    kept = policy.collect_mode.forward(torch.randn(3, 3))
    assert switched['switch'].all() and not kept['switch'].any()
    assert torch.equal(kept['action'], switched['tau'][:, 0])
    assert kept['action'].ne(0).all()


def test_kept_linear_trajectory_moves_by_twice_its_slope(monkeypatch):
    policy = make_taac(TaacLPolicy)
    policy.collect_mode.reset(None)
    policy.collect_mode.forward(torch.randn(2, 3))  # sizes the state for 2 envs
    # env 0: a = (0.5, 0.5), v = (0.1, -0.2); env 1: a = (0.9, -0.9), v = (0.3, -0.3)
    policy._collect_state.tau = torch.tensor([[[0.5, 0.5], [0.1, -0.2]], [[0.9, -0.9], [0.3, -0.3]]])
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(False))
    out = policy.collect_mode.forward(torch.randn(2, 3))
    # env 0: a' = (0.5 + 0.2, 0.5 - 0.4) = (0.7, 0.1); env 1: (0.9 + 0.6, -0.9 - 0.6) clamps to (1, -1)
    assert_close(out['action'], torch.tensor([[0.7, 0.1], [1.0, -1.0]]))
    assert_close(out['tau'][:, 1], torch.tensor([[0.1, -0.2], [0.3, -0.3]]))


@pytest.mark.parametrize('cls', FAMILIES)
def test_sampled_switches_keep_or_restart_the_trajectory_consistently(cls):
    torch.manual_seed(0)
    policy = make_taac(cls)
    trajectory = policy._trajectory
    policy.collect_mode.reset(None)
    kept_rows = switched_rows = 0
    for _ in range(8):
        out = policy.collect_mode.forward(torch.randn(4, 3))
        keep = ~out['switch']
        assert_close(out['tau'][keep], trajectory.advance(out['prev_tau'])[keep])
        if cls is not TAACPolicy:  # inverse mode: the new slope leads from the previous action to the new one
            slope = (out['tau'][:, 0] - out['prev_tau'][:, 0]) / 2
            assert_close(out['tau'][~keep, 1], slope[~keep])
        kept_rows, switched_rows = kept_rows + int(keep.sum()), switched_rows + int((~keep).sum())
    assert kept_rows > 0 and switched_rows > 0


def test_max_repeat_steps_forces_a_switch_on_schedule(monkeypatch):
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(False))  # the policy would never switch
    policy = make_taac(trajectory=dict(max_repeat_steps=2))
    policy.collect_mode.reset(None)
    switches = [bool(policy.collect_mode.forward(torch.randn(1, 3))['switch']) for _ in range(7)]
    # the start trajectory is followed 2 steps, then each new one on its switch step and one more
    assert switches == [False, False, True, False, True, False, True]
    policy.collect_mode.reset([0])  # a new episode restarts the count
    assert [bool(policy.collect_mode.forward(torch.randn(1, 3))['switch']) for _ in range(3)] == [False, False, True]


def test_no_trajectory_is_followed_more_than_max_repeat_steps():
    torch.manual_seed(0)
    policy = make_taac(trajectory=dict(max_repeat_steps=2))
    policy.collect_mode.reset(None)
    switches = torch.stack([policy.collect_mode.forward(torch.randn(3, 3))['switch'] for _ in range(20)], dim=1)
    for env in switches.tolist():
        run, longest = 0, 0  # steps on the current trajectory
        for switched in env:
            run = 1 if switched else run + 1
            longest = max(longest, run)
        assert longest <= 2
    assert (~switches).any()  # keeping happens: the limit is what bounds the runs


def test_random_action_follows_the_same_trajectory_contract():
    torch.manual_seed(0)
    policy = make_taac(TaacQPolicy)
    policy.collect_mode.reset(None)
    first = policy.collect_mode.random_action(torch.randn(5, 3))
    assert first['action'].shape == (5, 2) and first['action'].abs().max() <= 1.0
    assert first['prev_tau'].shape == (5, 3, 2) and not first['prev_tau'].any()
    assert first['tau'].shape == (5, 3, 2)
    assert first['switch'].shape == (5, ) and first['switch'].dtype == torch.bool
    previous = first['tau'].clone()
    second = policy.collect_mode.random_action(torch.randn(5, 3))
    assert torch.equal(second['prev_tau'], previous)
    keep = ~second['switch']
    assert_close(second['tau'][keep], QuadraticTrajectory().advance(previous)[keep])
    # the warm-up leaves the state where learning's collection carries on
    assert torch.equal(policy.collect_mode.forward(torch.randn(5, 3))['prev_tau'], second['tau'])


# ----- eval mode -----------------------------------------------------------------------------------

@pytest.mark.parametrize('cls', FAMILIES)
def test_greedy_eval_is_deterministic_for_equal_weights(cls):
    policy, clone = make_taac(cls, eval=dict(epsilon_greedy=0.0)), make_taac(cls, eval=dict(epsilon_greedy=0.0))
    clone.load_weights(policy.learn_mode.state_dict())
    obs = torch.randn(6, 4, 3)
    outputs = []
    for seed, each in ((1, policy), (2, clone)):
        torch.manual_seed(seed)
        each.eval_mode.reset(None)
        outputs.append([each.eval_mode.forward(obs[t]) for t in range(6)])
    for a, b in zip(*outputs):
        assert torch.equal(a['action'], b['action']) and torch.equal(a['switch'], b['switch'])


def test_eval_keeps_its_own_trajectory_state():
    torch.manual_seed(0)
    policy = make_taac(TaacLPolicy, trajectory=dict(max_repeat_steps=1))
    policy.collect_mode.reset(None)
    policy.collect_mode.forward(torch.randn(2, 3))
    collected = policy.collect_mode.forward(torch.randn(2, 3))['tau'].clone()
    assert collected.any()
    evaluated = policy.eval_mode.forward(torch.randn(2, 3))
    assert not evaluated['prev_tau'].any()  # eval starts from zeros, not from collect's trajectory
    evaluated = policy.eval_mode.forward(torch.randn(2, 3))
    assert torch.equal(policy.collect_mode.forward(torch.randn(2, 3))['prev_tau'], collected)
    policy.collect_mode.reset(None)
    assert torch.equal(policy.eval_mode.forward(torch.randn(2, 3))['prev_tau'], evaluated['tau'])


# ----- learn mode ------------------------------------------------------------------------------------

@pytest.mark.parametrize('cls', FAMILIES)
def test_learn_step_reports_finite_scalars(cls):
    torch.manual_seed(0)
    policy = make_taac(cls)
    info = policy.learn_mode.forward(sequence_batch(SIZES[cls]))
    names = policy.learn_mode.monitor_vars()
    assert {'critic_loss', 'twin_critic_loss', 'alpha_loss', 'switch_alpha', 'switch_prob'} <= set(names)
    for name in names:
        assert info[name].dim() == 0 and math.isfinite(float(info[name])), name


def test_compare_through_target_cuts_at_switches_and_episode_ends():
    policy = make_taac(discount_factor=0.5)
    first, mid, last = int(StepType.FIRST), int(StepType.MID), int(StepType.LAST)
    # two sequences of 4 steps; V (next_value) of step t's successor is 10 * (t + 1) in row 0, 100 in row 1
    batch = dict(
        reward=torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]]),
        # row 0: the rollout switched at step 2; row 1: the episode terminates at step 1, step 2 starts anew
        switch=torch.tensor([[True, False, True, False], [False, False, False, False]]),
        step_type=torch.tensor([[mid, mid, mid, mid], [mid, last, first, mid]], dtype=torch.int8),
        terminated=torch.tensor([[False] * 4, [False, True, False, False]]),
        truncated=torch.zeros(2, 4, dtype=torch.bool),
    )
    next_value = torch.tensor([[10.0, 20.0, 30.0, 40.0], [100.0, 100.0, 100.0, 100.0]])
    # the current policy would switch at step 3 of row 0 (sampled at step 2's successor)
    next_switch = torch.tensor([[False, False, True, False], [False, False, False, False]])
    # row 0: G3 = 4 + 0.5 * 40 = 24; step 2 is cut by the policy's switch at step 3: G2 = 3 + 0.5 * 30 = 18;
    #        step 1 is cut by the rollout's switch at step 2: G1 = 2 + 0.5 * 20 = 12; G0 = 1 + 0.5 * G1 = 7
    # row 1: G3 = 1 + 50 = 51, G2 = 1 + 0.5 * 51 = 26.5; step 1 terminates: G1 = 1;
    #        G0 = 1 + 0.5 * G1 = 1.5 (no cut: the episode's end is followed, not bootstrapped)
    target = policy._compare_through_target(batch, next_value, next_switch)
    assert_close(target, torch.tensor([[7.0, 12.0, 18.0, 24.0], [1.5, 1.0, 26.5, 51.0]]))


def test_fixed_temperatures_leave_alpha_loss_out():
    policy = make_taac(auto_alpha=False, alpha=0.05, switch_alpha=0.5, model=dict(twin_critic=False))
    info = policy.learn_mode.forward(sequence_batch(1))
    assert 'alpha_loss' not in policy.learn_mode.monitor_vars() and 'alpha_loss' not in info
    assert 'twin_critic_loss' not in policy.learn_mode.monitor_vars()
    assert float(info['alpha']) == pytest.approx(0.05) and float(info['switch_alpha']) == pytest.approx(0.5)


@pytest.mark.parametrize('cls', FAMILIES)
def test_critic_loss_falls_on_a_fixed_batch(cls):
    torch.manual_seed(0)
    policy = make_taac(cls, learning_rate_q=1e-3, discount_factor=0.5)
    # rewards near 1: the return's fixed point is near 2 whichever steps cut
    batch = sequence_batch(SIZES[cls], reward=lambda shape, g: 1.0 + 0.1 * torch.randn(*shape, generator=g))
    first = float(policy.learn_mode.forward(batch)['critic_loss'])
    last = [float(policy.learn_mode.forward(batch)['critic_loss']) for _ in range(100)][-5:]
    assert sum(last) / 5 < 0.5 * first


def test_actor_gradient_through_q_is_scaled_by_the_switch_probability():
    """The actor loss is alpha log pi - p(switch) Q(s, new): with the advantage clipped to one value c the
    switch probability is sigmoid(c), so the Q part of the gradient scales by 1 (c = 50), 1/2 (c = 0), 0 (c = -50)."""
    batch = sequence_batch(1)
    base = make_taac(auto_alpha=False)
    grads = {}
    for clip in (50.0, 0.0, -50.0):
        policy = make_taac(auto_alpha=False, switch_advantage_clip=[clip, clip])
        policy.model.load_state_dict(base.model.state_dict())
        policy._target_critic.net.load_state_dict(base._target_critic.net.state_dict())
        torch.manual_seed(5)
        info = policy.learn_mode.forward(batch)
        assert float(info['switch_prob']) == pytest.approx(1.0 / (1.0 + math.exp(-clip)))
        grads[clip] = torch.cat([p.grad.flatten() for p in policy.model.actor_parameters()])
    through_q = grads[50.0] - grads[-50.0]  # entropy part cancels
    assert through_q.abs().max() > 1e-6
    assert_close(grads[0.0] - grads[-50.0], 0.5 * through_q, atol=1e-6, rtol=1e-4)


def test_actor_step_leaves_critic_weights_alone():
    torch.manual_seed(0)
    policy = make_taac(learning_rate_q=0.0)
    critic_before = [p.clone() for p in policy.model.critic.parameters()]
    actor_before = [p.clone() for p in policy.model.actor_parameters()]
    policy.learn_mode.forward(sequence_batch(1))
    assert all(torch.equal(a, b) for a, b in zip(critic_before, policy.model.critic.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(actor_before, policy.model.actor_parameters()))


@pytest.mark.parametrize('cls', [TAACPolicy, TaacQPolicy])
def test_state_dict_round_trip_restores_identical_updates(tmp_path, cls):
    torch.manual_seed(0)
    policy = make_taac(cls)
    batch = sequence_batch(SIZES[cls])
    for _ in range(3):
        policy.learn_mode.forward(batch)
    save_checkpoint(policy.learn_mode.state_dict(), tmp_path / 'taac.pt')
    state = load_checkpoint(tmp_path / 'taac.pt')
    assert set(state) == {'model', 'target_critic', 'temperature', 'switch_temperature', 'optimizer'}
    clone = make_taac(cls)
    clone.learn_mode.load_state_dict(state)
    # both temperatures moved away from their initial values (0.2, 1.0) and come back with the state
    assert float(policy._temperature.value) != pytest.approx(0.2)
    assert float(policy._switch_temperature.value) != pytest.approx(1.0)
    assert float(clone._temperature.value) == float(policy._temperature.value)
    assert float(clone._switch_temperature.value) == float(policy._switch_temperature.value)
    torch.manual_seed(1)
    expected = policy.learn_mode.forward(batch)
    torch.manual_seed(1)
    got = clone.learn_mode.forward(batch)
    for name in policy.learn_mode.monitor_vars():
        assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-6), name
    for a, b in zip(policy.model.parameters(), clone.model.parameters()):
        assert torch.equal(a, b)


# ----- config errors -------------------------------------------------------------------------------

def test_reversed_switch_advantage_clip_is_a_config_error():
    with pytest.raises(ConfigError, match=re.escape('policy.learn.switch_advantage_clip must be [low, high] with '
                                                    'low <= high, got [1, 0]')):
        make_taac(switch_advantage_clip=[1, 0])


def test_unroll_len_one_is_a_config_error():
    with pytest.raises(ConfigError, match=r'policy.collect.unroll_len must be >= 2 for taac_l: .* got 1'):
        make_taac(TaacLPolicy, collect=dict(unroll_len=1))


def test_negative_max_repeat_steps_is_a_config_error():
    with pytest.raises(ConfigError, match=re.escape('policy.trajectory.max_repeat_steps must be >= 0 (0: no limit), '
                                                    'got -1')):
        make_taac(trajectory=dict(max_repeat_steps=-1))


def test_model_trajectory_size_of_another_family_is_a_config_error():
    with pytest.raises(ConfigError, match='policy.model.trajectory_size is 3 but taac trajectories have 1 '
                                          'components; leave the key out'):
        make_taac(TAACPolicy, model=dict(trajectory_size=3))


# ----- stored transitions ----------------------------------------------------------------------------

def test_process_transition_stores_trajectories_switch_and_step_type():
    policy = make_taac(TaacLPolicy)
    policy.collect_mode.reset(None)
    obs = torch.randn(4, 3)
    out = policy.collect_mode.forward(obs)
    timestep = SimpleNamespace(
        first=torch.tensor([True, False, False, False]),
        terminated=torch.tensor([False, True, False, False]),
        truncated=torch.tensor([False, False, True, False]),
        reward=torch.tensor([1.0, 2.0, 3.0, 4.0]),
        next_obs=torch.randn(4, 3),
    )
    transition = policy.collect_mode.process_transition(obs, out, timestep)
    assert set(transition) == {'obs', 'action', 'reward', 'next_obs', 'terminated', 'truncated', 'prev_tau', 'tau',
                               'switch', 'step_type'}
    for key in ('prev_tau', 'tau', 'switch', 'action'):
        assert torch.equal(transition[key], out[key]), key
    assert transition['step_type'].dtype == torch.int8
    assert transition['step_type'].tolist() == [StepType.FIRST, StepType.LAST, StepType.LAST, StepType.MID]
    assert torch.equal(transition['next_obs'], timestep.next_obs)


def test_linear_inverse_mode_false_starts_from_the_sampled_slope(monkeypatch):
    monkeypatch.setattr(taac_module, '_sample_switch', fixed_switch(True))
    torch.manual_seed(0)
    policy = make_taac(TaacLPolicy, trajectory=dict(inverse_mode=False))
    policy.collect_mode.reset(None)
    out = policy.collect_mode.forward(torch.randn(3, 3))
    # from a zero start: a' = clamp(0 + 2 v) with v the sampled action
    assert_close(out['tau'], LinearTrajectory(inverse_mode=False).advance(torch.stack(
        [torch.zeros(3, 2), out['tau'][:, 1]], dim=1)))
    assert_close(out['action'], (2 * out['tau'][:, 1]).clamp(-1, 1))


def test_weights_carry_the_switch_temperature_that_acting_samples_with():
    source, target = make_taac(), make_taac()
    with torch.no_grad():
        source._switch_temperature.raw.fill_(1.5)
    target.load_weights(source.weights())  # what a Ray collector receives
    assert float(target._switch_temperature.value) == pytest.approx(float(source._switch_temperature.value))


def test_normalize_reward_scales_the_replayed_sequences_by_the_return_std_of_now():
    torch.manual_seed(0)
    cfg = TAACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2, actor_hidden_sizes=[16, 16], critic_hidden_sizes=[16, 16])
    cfg.learn.update(discount_factor=0.5, target_entropy='-1.61*dim')
    cfg.normalize.update(reward=True, clip=1.0)
    policy, plain = TAACPolicy(cfg), make_taac(discount_factor=0.5, target_entropy='-1.61*dim')
    assert policy._target_entropy == pytest.approx(-3.22)
    plain.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    # rewards 1, 2 then 2, 4 of two envs: their returns (gamma 0.5) have the variance 1.17201171
    policy.collect_mode.reset(None)
    obs = torch.zeros(2, 3)
    for reward, done in (([1.0, 2.0], [False, True]), ([2.0, 4.0], [False, False])):
        out = policy.collect_mode.forward(obs)
        timestep = SimpleNamespace(first=torch.zeros(2, dtype=torch.bool), terminated=torch.tensor(done),
                                   truncated=torch.zeros(2, dtype=torch.bool), reward=torch.tensor(reward),
                                   next_obs=obs)
        assert policy.collect_mode.process_transition(obs, out, timestep)['reward'].tolist() == reward
    assert policy.weights()['reward_rms']['var'].item() == pytest.approx(1.17201171, abs=1e-8)
    batch = sequence_batch(1)
    scaled = dict(batch, reward=(batch['reward'] / math.sqrt(1.17201171 + 1e-8)).clamp(-1.0, 1.0))
    torch.manual_seed(1)
    got = policy.learn_mode.forward(dict(batch))
    torch.manual_seed(1)
    expected = plain.learn_mode.forward(scaled)
    for name in ('critic_loss', 'target_q_value', 'policy_loss'):
        assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-5), name
    # the statistics and each env's return travel with the checkpoint; the trajectories beside them
    clone = TAACPolicy(cfg)
    clone.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    clone.collect_mode.load_state_dict(policy.collect_mode.state_dict())
    assert torch.equal(clone._reward_scaler.return_rms.var, policy._reward_scaler.return_rms.var)
    assert clone._reward_scaler.returns.tolist() == [2.5, 4.0]
    assert torch.equal(clone._collect_state.tau, policy._collect_state.tau)
