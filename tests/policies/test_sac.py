import math

import pytest
import torch

from tidal.base.stages import LearnPlan, LossStage

from tidal.policies import DiscreteSACPolicy, SACPolicy
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


@pytest.mark.skipif(not torch.cuda.is_available(), reason='needs a CUDA device')
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
