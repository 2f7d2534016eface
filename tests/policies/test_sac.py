import math
from types import SimpleNamespace

import pytest
import torch
from torch.testing import assert_close

from tidal.base.errors import ConfigError
from tidal.base.stages import LearnPlan, LossStage

from tidal.policies import DiscreteSACPolicy, SACPolicy, SACVPolicy, SQILSACPolicy
from tidal.registry import POLICY_REGISTRY
from tidal.worker.checkpoint import load_checkpoint, save_checkpoint


def make_sac(**learn) -> SACPolicy:
    cfg = SACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2, actor_hidden_sizes=[32, 32], critic_hidden_sizes=[32, 32])
    cfg.learn.update(learn)
    return SACPolicy(cfg)


def continuous_batch(size: int = 32) -> dict:
    generator = torch.Generator().manual_seed(0)
    return dict(obs=torch.randn(size, 3, generator=generator),
                action=torch.rand(size, 2, generator=generator) * 2 - 1,
                reward=torch.randn(size, generator=generator),
                next_obs=torch.randn(size, 3, generator=generator),
                terminated=torch.rand(size, generator=generator) < 0.1,
                weight=torch.rand(size, generator=generator))


def test_policies_are_registered():
    assert POLICY_REGISTRY.get('sac') is SACPolicy
    assert POLICY_REGISTRY.get('discrete_sac') is DiscreteSACPolicy


def test_sac_learn_step_reports_scalars_and_per_sample_priority():
    torch.manual_seed(0)
    policy = make_sac()
    info = policy.learn_mode.forward(continuous_batch())
    for name in policy.learn_mode.monitor_vars():
        assert info[name].dim() == 0 and math.isfinite(float(info[name])), name
    assert info['priority'].shape == (32,)
    assert (info['priority'] >= 0).all()


def test_sac_critic_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    policy = make_sac(learning_rate_q=1e-3)
    batch = continuous_batch()
    first = float(policy.learn_mode.forward(batch)['critic_loss'])
    for _ in range(150):
        last = float(policy.learn_mode.forward(batch)['critic_loss'])
    assert last < 0.5 * first


def test_sac_actor_step_leaves_critic_weights_alone():
    torch.manual_seed(0)
    policy = make_sac(learning_rate_q=0.0)
    critic_before = [p.clone() for p in policy.model.critic.parameters()]
    actor_before = [p.clone() for p in policy.model.actor_parameters()]
    policy.learn_mode.forward(continuous_batch())
    assert all(torch.equal(a, b) for a, b in zip(critic_before, policy.model.critic.parameters()))
    assert any(not torch.equal(a, b) for a, b in zip(actor_before, policy.model.actor_parameters()))


def test_sac_default_target_entropy_is_minus_action_dim():
    assert make_sac()._target_entropy == -2.0
    assert make_sac(target_entropy=-0.5)._target_entropy == -0.5


def test_sac_fixed_alpha_does_not_change():
    policy = make_sac(auto_alpha=False, alpha=0.05)
    info = policy.learn_mode.forward(continuous_batch())
    assert float(info['alpha']) == pytest.approx(0.05)
    assert 'alpha_loss' not in info


def test_sac_state_dict_round_trip_restores_identical_updates(tmp_path):
    torch.manual_seed(0)
    policy = make_sac()
    batch = continuous_batch()
    policy.learn_mode.forward(batch)
    save_checkpoint(policy.learn_mode.state_dict(), tmp_path / 'sac.pt')
    state = load_checkpoint(tmp_path / 'sac.pt')
    assert set(state) == {'model', 'target_critic', 'temperature', 'optimizer_q', 'optimizer_policy'}
    clone = make_sac()
    clone.learn_mode.load_state_dict(state)
    torch.manual_seed(1)
    expected = policy.learn_mode.forward(batch)
    torch.manual_seed(1)
    got = clone.learn_mode.forward(batch)
    for name in ('critic_loss', 'policy_loss', 'alpha'):
        assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-6), name


def test_sac_actions_are_bounded_and_eval_is_deterministic():
    policy = make_sac()
    obs = torch.randn(7, 3)
    assert policy.collect_mode.forward(obs)['action'].abs().max() <= 1.0
    assert torch.equal(policy.eval_mode.forward(obs)['action'], policy.eval_mode.forward(obs)['action'])
    random = policy.collect_mode.random_action(obs)['action']
    assert random.shape == (7, 2) and random.abs().max() <= 1.0


def test_policy_without_learn_mode_refuses_it():
    cfg = SACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2)
    policy = SACPolicy(cfg, enable_field=('eval',))
    with pytest.raises(RuntimeError, match="without its 'learn' mode"):
        policy.learn_mode


@pytest.mark.gpu
def test_sac_runs_on_cuda():
    cfg = SACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2)
    cfg.device = 'cuda'
    policy = SACPolicy(cfg)
    batch = {k: v.cuda() for k, v in continuous_batch().items()}
    info = policy.learn_mode.forward(batch)
    assert info['critic_loss'].device.type == 'cuda'


def test_one_optimizer_step_equals_separate_actor_and_temperature_steps():
    """Sharing the optimizer is exact: each loss sees the other's parameters detached."""
    batch = continuous_batch()
    shared = make_sac()
    separate = make_sac()
    separate.model.load_state_dict(shared.model.state_dict())
    separate._target_critic.net.load_state_dict(shared._target_critic.net.state_dict())
    actor_optimizer = torch.optim.Adam(separate.model.actor_parameters(), lr=3e-4)
    alpha_optimizer = torch.optim.Adam(separate._temperature.parameters(), lr=3e-4)

    seen = {}

    def actor_loss(rows):
        """The shared stage's loss, stepped by an optimizer of the actor alone (alpha's term has no gradient
        there); the entropy of its fresh actions is kept for the temperature's own step."""
        loss, values = separate._policy_loss(rows)
        seen['entropy'] = values['entropy']
        return loss, values

    def temperature_loss(rows):
        # eq. 18 on the log-probabilities the actor step saw: -log_alpha * (log pi + target entropy), averaged
        return -(separate._temperature.raw * (-seen['entropy'] + separate._target_entropy)), {}

    def separate_plan(rows):
        plan = SACPolicy._learn_plan(separate, rows)
        critic = plan.stages[0]
        return LearnPlan([critic, LossStage(actor_optimizer, actor_loss, None, loss_key=None, norm_key=None,
                                            frozen=(separate.model.critic,)),
                          LossStage(alpha_optimizer, temperature_loss, None, loss_key=None, norm_key=None)],
                         after=plan.after)

    separate._learn_plan = separate_plan
    for _ in range(3):
        torch.manual_seed(7)
        shared.learn_mode.forward(batch)
        torch.manual_seed(7)
        separate.learn_mode.forward(batch)
    for a, b in zip(shared.model.actor_parameters(), separate.model.actor_parameters()):
        assert torch.allclose(a, b, atol=1e-6)
    assert float(shared._temperature.value) == pytest.approx(float(separate._temperature.value), rel=1e-6)


# ----- reward normalisation (policy.normalize.reward) and the per-dimension target entropy -----------------

def make_normalizing(cls=SACPolicy, clip=10.0, **learn):
    cfg = cls.default_config()
    cfg.model.update(obs_shape=3, action_shape=2, actor_hidden_sizes=[32, 32], critic_hidden_sizes=[32, 32])
    cfg.learn.update(discount_factor=0.5, **learn)
    cfg.normalize.update(reward=True, clip=clip)
    return cls(cfg)


def collect_two_steps(policy):
    """Two env steps of two envs whose discounted returns (gamma 0.5) have the population variance 1.17201171
    (tests/rl_utils/test_normalizer.py works it out by hand)."""
    policy.collect_mode.reset(None)
    obs = torch.zeros(2, 3)
    for reward, terminated in (([1.0, 2.0], [False, True]), ([2.0, 4.0], [False, False])):
        timestep = SimpleNamespace(next_obs=obs, reward=torch.tensor(reward), terminated=torch.tensor(terminated),
                                   truncated=torch.zeros(2, dtype=torch.bool), first=torch.zeros(2, dtype=torch.bool))
        transition = policy.collect_mode.process_transition(obs, {'action': torch.zeros(2, 2)}, timestep)
        assert transition['reward'].tolist() == reward  # the replay keeps the env's rewards


def test_sac_normalize_reward_learns_from_rewards_over_the_return_std_of_now():
    torch.manual_seed(0)
    policy = make_normalizing()
    plain = make_sac(discount_factor=0.5)
    plain.learn_mode.load_state_dict(policy.learn_mode.state_dict() | {'model': policy.model.state_dict()})
    collect_two_steps(policy)
    batch = continuous_batch()
    batch['reward'][:3] = torch.tensor([1.0, -3.0, 20.0])
    # (1, -3, 20) / sqrt(1.17201171 + 1e-8) = (0.92370655, -2.77111965, 18.47...), clipped at 10
    scaled = dict(batch, reward=batch['reward'] / math.sqrt(1.17201171 + 1e-8))
    scaled['reward'][2] = 10.0
    assert_close(scaled['reward'][:2], torch.tensor([0.92370655, -2.77111965]))
    torch.manual_seed(1)
    got = policy.learn_mode.forward(dict(batch))
    torch.manual_seed(1)
    expected = plain.learn_mode.forward(scaled)
    for name in ('critic_loss', 'policy_loss', 'target_q_value'):
        assert float(got[name]) == pytest.approx(float(expected[name]), rel=1e-5), name


@pytest.mark.parametrize('cls', [SACPolicy, SACVPolicy, DiscreteSACPolicy])
def test_normalize_reward_statistics_round_trip_through_a_checkpoint(tmp_path, cls):
    policy = make_normalizing(cls, clip=1.0)
    collect_two_steps(policy)
    save_checkpoint({'learn': policy.learn_mode.state_dict(), 'collect': policy.collect_mode.state_dict()},
                    tmp_path / 'ckpt.pt')
    state = load_checkpoint(tmp_path / 'ckpt.pt')
    assert state['learn']['reward_rms']['var'].item() == pytest.approx(1.17201171, abs=1e-8)
    assert state['collect']['reward_returns'].tolist() == [2.5, 4.0]  # each env's return so far
    clone = make_normalizing(cls, clip=1.0)
    clone.learn_mode.load_state_dict(state['learn'])
    clone.collect_mode.load_state_dict(state['collect'])
    rewards = torch.tensor([1.0, -3.0])
    assert torch.equal(clone._reward_scaler.normalize(rewards), policy._reward_scaler.normalize(rewards))
    assert_close(clone._reward_scaler.normalize(rewards), torch.tensor([0.92370655, -1.0]))
    assert torch.equal(clone._reward_scaler.returns, policy._reward_scaler.returns)
    # what a Ray collector receives carries them too
    acting = make_normalizing(cls, clip=1.0)
    acting.load_weights(policy.weights())
    assert torch.equal(acting._reward_scaler.return_rms.var, policy._reward_scaler.return_rms.var)


def test_sac_without_normalize_reward_keeps_its_checkpoint_keys():
    assert 'reward_rms' not in make_sac().learn_mode.state_dict()
    assert make_sac().running_statistics() == {}


def test_sqil_refuses_normalize_reward_in_one_line():
    cfg = SQILSACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=2)
    cfg.normalize.reward = True
    with pytest.raises(ConfigError) as info:
        SQILSACPolicy(cfg)
    assert str(info.value) == ("policy.normalize.reward cannot be used with policy 'sqil_sac': SQIL relabels every "
                               "reward (1 for a demonstration, 0 for the agent's own data); set it to false")


def test_target_entropy_per_action_dimension():
    assert make_sac(target_entropy='-1.61*dim')._target_entropy == pytest.approx(-3.22)
    assert make_sac(target_entropy='0.5*dim')._target_entropy == pytest.approx(1.0)


def test_the_per_dimension_target_entropy_is_checked_by_its_rule_and_refused_for_discrete_actions():
    from tidal.config import compile_config
    from tidal.config.zoo import pendulum_sac
    cfg = compile_config(pendulum_sac.main_config, pendulum_sac.create_config,
                         overrides=['policy.learn.target_entropy=-1.61*dim'])
    assert cfg.policy.learn.target_entropy == '-1.61*dim'
    with pytest.raises(ConfigError, match='target_entropy'):
        compile_config(pendulum_sac.main_config, pendulum_sac.create_config,
                       overrides=['policy.learn.target_entropy=-1.61*actions'])
    cfg = DiscreteSACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=4)
    cfg.learn.target_entropy = '-1.61*dim'
    with pytest.raises(ConfigError, match=r"is per dimension of continuous actions; 'discrete_sac' takes a number"):
        DiscreteSACPolicy(cfg)
