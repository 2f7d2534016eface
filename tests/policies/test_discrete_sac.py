import math

import pytest
import torch

from tidal.policies import DiscreteSACPolicy


def make_policy(**learn) -> DiscreteSACPolicy:
    cfg = DiscreteSACPolicy.default_config()
    cfg.model.update(obs_shape=4, action_shape=3, actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.learn.update(learn)
    return DiscreteSACPolicy(cfg)


def masked_obs(size: int) -> dict:
    mask = torch.zeros(size, 3, dtype=torch.bool)
    mask[:, 1] = True
    mask[: size // 2, 2] = True
    return {'observation': torch.randn(size, 4), 'action_mask': mask}


def test_default_target_entropy_is_the_papers():
    assert make_policy()._target_entropy == pytest.approx(0.98 * math.log(3))


def test_masked_actions_are_never_chosen():
    torch.manual_seed(0)
    policy = make_policy()
    obs = masked_obs(64)
    for actions in (policy.collect_mode.forward(obs)['action'], policy.collect_mode.random_action(obs)['action'],
                    policy.eval_mode.forward(obs)['action']):
        assert obs['action_mask'].gather(1, actions[:, None]).all()


def test_discrete_sac_learn_step_with_action_mask():
    torch.manual_seed(0)
    policy = make_policy()
    obs = masked_obs(16)
    batch = dict(obs=obs, next_obs=obs, action=torch.ones(16, dtype=torch.long), reward=torch.ones(16),
                 terminated=torch.zeros(16, dtype=torch.bool))
    info = policy.learn_mode.forward(batch)
    assert all(math.isfinite(float(info[k])) for k in policy.learn_mode.monitor_vars())
    assert info['priority'].shape == (16,)


def test_discrete_soft_value_target_is_exact_expectation():
    """With alpha fixed and one critic, the target is sum_a pi(a|s') (Q'(s',a) - alpha log pi(a|s'))."""
    torch.manual_seed(0)
    policy = make_policy(auto_alpha=False, alpha=0.5)
    obs = torch.randn(8, 4)
    with torch.no_grad():
        log_pi = policy.model.actor(obs).log_softmax(-1)
        q = policy._target_critic(obs).min(dim=0).values
        expected = (log_pi.exp() * (q - 0.5 * log_pi)).sum(-1)
    batch = dict(obs=obs, next_obs=obs, action=torch.zeros(8, dtype=torch.long), reward=torch.zeros(8),
                 terminated=torch.zeros(8, dtype=torch.bool))
    info = policy.learn_mode.forward(batch)
    assert float(info['target_q_value']) == pytest.approx(expected.mean().item(), rel=1e-5)


def test_discrete_critic_loss_falls_on_a_fixed_batch():
    torch.manual_seed(0)
    policy = make_policy(learning_rate_q=3e-3)
    batch = dict(obs=torch.randn(32, 4), next_obs=torch.randn(32, 4), action=torch.randint(0, 3, (32,)),
                 reward=torch.randn(32), terminated=torch.ones(32, dtype=torch.bool))
    first = float(policy.learn_mode.forward(batch)['critic_loss'])
    for _ in range(100):
        last = float(policy.learn_mode.forward(batch)['critic_loss'])
    assert last < 0.3 * first
