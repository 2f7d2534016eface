import math

import pytest
import torch

import tidal.policies.sac_v as sac_v_module
from tidal.config import compile_config, resolve_config_source
from tidal.base.errors import ConfigError
from tidal.models import ContinuousQVAC
from tidal.policies import SACVPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.worker.checkpoint import load_checkpoint, save_checkpoint


def make_sac_v(priority_IS_weight: bool = False, **learn) -> SACVPolicy:
    cfg = SACVPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2, actor_hidden_sizes=[32, 32], critic_hidden_sizes=[32, 32],
                     value_hidden_sizes=[32, 32])
    cfg.priority_IS_weight = priority_IS_weight
    cfg.learn.update(learn)
    return SACVPolicy(cfg)


def continuous_batch(size: int = 32) -> dict:
    generator = torch.Generator().manual_seed(0)
    return dict(obs=torch.randn(size, 3, generator=generator),
                action=torch.rand(size, 2, generator=generator) * 2 - 1,
                reward=torch.randn(size, generator=generator),
                next_obs=torch.randn(size, 3, generator=generator),
                terminated=torch.rand(size, generator=generator) < 0.1,
                weight=torch.rand(size, generator=generator))


@torch.no_grad()
def make_constant(policy: SACVPolicy, q: tuple[float, float], v: float) -> None:
    """Zero the output layers' weights so that Q_i(s, a) = q[i] and V(s) = V_target(s) = v everywhere."""
    critic_out, value_out = policy.model.critic.q.net[-1], policy.model.value.v[-1]
    critic_out.weight.zero_()
    critic_out.bias.copy_(torch.tensor(q).reshape(2, 1, 1))
    value_out.weight.zero_()
    value_out.bias.fill_(v)
    policy._target_value.update(1.0)


def test_sac_v_is_registered_with_its_model():
    assert POLICY_REGISTRY.get('sac_v') is SACVPolicy
    assert SACVPolicy.default_model({}) == ('continuous_qvac', ['tidal.models.qvac'])
    assert isinstance(make_sac_v().model, ContinuousQVAC)


@pytest.mark.parametrize('weight, expected_loss', [(None, 2.625), ([1.0, 0.0, 2.0], 3.5625)])
def test_value_loss_regresses_v_to_min_q_minus_alpha_log_pi(monkeypatch, weight, expected_loss):
    """Q = (2, -1), log pi(a~|s) = (-1, 0.5, 2), alpha = 0.5: V targets -1 - 0.5 log pi = (-0.5, -1.25, -2);
    with V = 0.25 the squared errors are (0.5625, 2.25, 5.0625)."""
    policy = make_sac_v(priority_IS_weight=weight is not None, alpha=0.5)
    make_constant(policy, q=(2.0, -1.0), v=0.25)
    log_prob = torch.tensor([-1.0, 0.5, 2.0])
    monkeypatch.setattr(sac_v_module, 'tanh_gaussian_sample', lambda mu, log_std, noise=None: (torch.zeros_like(mu), log_prob))
    batch = dict(obs=torch.randn(3, 3), action=torch.zeros(3, 2), reward=torch.zeros(3), next_obs=torch.randn(3, 3),
                 terminated=torch.zeros(3, dtype=torch.bool))
    if weight is not None:
        batch['weight'] = torch.tensor(weight)
    info = policy.learn_mode.forward(batch)
    assert float(info['target_v_value']) == pytest.approx(-1.25)
    assert float(info['v_value']) == pytest.approx(0.25)
    assert float(info['value_loss']) == pytest.approx(expected_loss)


def test_q_target_is_scaled_reward_plus_discounted_target_value_unless_terminated():
    """reward_scale 5, gamma 0.9, V_target = 3: targets 5 * 1 + 0.9 * 3 = 7.7 and 5 * 2 = 10 (terminated);
    Q = (1, 0) gives losses mean(6.7^2, 9^2) = 62.945 and mean(7.7^2, 10^2) = 79.645."""
    policy = make_sac_v(reward_scale=5.0, discount_factor=0.9)
    make_constant(policy, q=(1.0, 0.0), v=3.0)
    batch = dict(obs=torch.randn(2, 3), action=torch.zeros(2, 2), reward=torch.tensor([1.0, 2.0]),
                 next_obs=torch.randn(2, 3), terminated=torch.tensor([False, True]))
    info = policy.learn_mode.forward(batch)
    assert float(info['target_q_value']) == pytest.approx(3.0)
    assert float(info['critic_loss']) == pytest.approx(62.945)
    assert float(info['twin_critic_loss']) == pytest.approx(79.645)
    assert torch.allclose(info['priority'], torch.tensor([(6.7 + 7.7) / 2, (9.0 + 10.0) / 2]))


def test_q_critics_have_no_target_and_v_target_follows_by_polyak_averaging():
    torch.manual_seed(0)
    policy = make_sac_v(target_theta=0.25)
    assert not hasattr(policy, '_target_critic')
    with torch.no_grad():
        for p in policy._target_value.parameters():
            p.add_(1.0)  # make the target differ from the online network
    target_before = [p.clone() for p in policy._target_value.parameters()]
    policy.learn_mode.forward(continuous_batch())
    for before, online, after in zip(target_before, policy.model.value.parameters(),
                                     policy._target_value.parameters()):
        assert torch.allclose(after, 0.75 * before + 0.25 * online, atol=1e-6)


def test_sac_v_learn_step_reports_finite_scalars_and_per_sample_priority():
    torch.manual_seed(0)
    policy = make_sac_v()
    info = policy.learn_mode.forward(continuous_batch())
    names = policy.learn_mode.monitor_vars()
    assert {'value_loss', 'v_value', 'target_v_value', 'critic_loss', 'twin_critic_loss', 'policy_loss'} <= set(names)
    assert 'alpha_loss' not in names and 'alpha_loss' not in info
    for name in names:
        assert info[name].dim() == 0 and math.isfinite(float(info[name])), name
    assert info['priority'].shape == (32,)
    assert float(info['alpha']) == pytest.approx(0.2)


def test_sac_v_critic_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    policy = make_sac_v(learning_rate_q=1e-3)
    batch = continuous_batch()
    first = float(policy.learn_mode.forward(batch)['critic_loss'])
    for _ in range(150):
        last = float(policy.learn_mode.forward(batch)['critic_loss'])
    assert last < 0.5 * first


def test_auto_alpha_uses_the_temperature_machinery_of_sac():
    torch.manual_seed(0)
    policy = make_sac_v(auto_alpha=True, alpha=0.2)
    assert policy._target_entropy == -2.0
    batch = continuous_batch()
    assert 'alpha_loss' in policy.learn_mode.forward(batch)
    assert float(policy.learn_mode.forward(batch)['alpha']) != pytest.approx(0.2, abs=1e-7)


@pytest.mark.parametrize('auto_alpha', [False, True])
def test_sac_v_state_dict_round_trip_restores_identical_updates(tmp_path, auto_alpha):
    torch.manual_seed(0)
    policy = make_sac_v(auto_alpha=auto_alpha)
    batch = continuous_batch()
    policy.learn_mode.forward(batch)
    save_checkpoint(policy.learn_mode.state_dict(), tmp_path / 'sac_v.pt')
    state = load_checkpoint(tmp_path / 'sac_v.pt')
    expected_keys = {'model', 'target_value', 'temperature', 'optimizer_q', 'optimizer_policy', 'optimizer_value'}
    assert set(state) == expected_keys
    torch.manual_seed(7)
    clone = make_sac_v(auto_alpha=auto_alpha)
    clone.learn_mode.load_state_dict(state)
    torch.manual_seed(1)
    expected = policy.learn_mode.forward(batch)
    torch.manual_seed(1)
    got = clone.learn_mode.forward(batch)
    for name in policy.learn_mode.monitor_vars():
        assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-6), name
    for mine, theirs in zip(policy._target_value.parameters(), clone._target_value.parameters()):
        assert torch.equal(mine, theirs)


def test_sac_v_eval_acts_by_the_squashed_mean():
    policy = make_sac_v()
    obs = torch.randn(5, 3)
    with torch.no_grad():
        mu, _ = policy.model.actor(obs)
    assert torch.equal(policy.eval_mode.forward(obs)['action'], torch.tanh(mu))
    assert policy.collect_mode.forward(obs)['action'].abs().max() <= 1.0


def test_zoo_config_compiles_and_builds_a_learning_policy():
    cfg = compile_config(*resolve_config_source('pendulum_sac_v'))
    assert cfg.policy.type == 'sac_v' and cfg.policy.model.obs_shape == 3 and cfg.policy.model.action_shape == 1
    assert cfg.policy.learn.auto_alpha is False and cfg.policy.learn.reward_scale == 1.0
    policy = POLICY_REGISTRY.build(cfg.policy.type, cfg.policy)
    assert isinstance(policy.model, ContinuousQVAC)
    batch = dict(obs=torch.randn(4, 3), action=torch.rand(4, 1) * 2 - 1, reward=torch.randn(4),
                 next_obs=torch.randn(4, 3), terminated=torch.zeros(4, dtype=torch.bool))
    info = policy.learn_mode.forward(batch)
    assert all(math.isfinite(float(info[name])) for name in policy.learn_mode.monitor_vars())


def test_zoo_config_rejects_a_model_key_the_value_model_does_not_take():
    main, create = resolve_config_source('pendulum_sac_v')
    main['policy']['model']['value_hidden_size'] = [64]
    with pytest.raises(ConfigError, match="did you mean 'value_hidden_sizes'"):
        compile_config(main, create, infer_shapes=False)
