import math

import pytest
import torch

from tidal.models import Temperature
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


@pytest.mark.parametrize('alpha', [0.5, 0.0])  # 0: no entropy bonus, the plain expectation of Q'
def test_discrete_soft_value_target_is_exact_expectation(alpha):
    """With alpha fixed and one critic, the target is sum_a pi(a|s') (Q'(s',a) - alpha log pi(a|s'))."""
    torch.manual_seed(0)
    policy = make_policy(auto_alpha=False, alpha=alpha)
    obs = torch.randn(8, 4)
    with torch.no_grad():
        log_pi = policy.model.actor(obs).log_softmax(-1)
        q = policy._target_critic(obs).min(dim=0).values
        expected = (log_pi.exp() * (q - alpha * log_pi)).sum(-1)
    batch = dict(obs=obs, next_obs=obs, action=torch.zeros(8, dtype=torch.long), reward=torch.zeros(8),
                 terminated=torch.zeros(8, dtype=torch.bool))
    info = policy.learn_mode.forward(batch)
    assert float(info['alpha']) == alpha and 'alpha_loss' not in info
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


# ----- target entropy under action masks -------------------------------------------------------

def uniform_six_action_policy(**learn) -> DiscreteSACPolicy:
    """Six actions and zero logits, so the actor is uniform over whatever actions a mask allows."""
    cfg = DiscreteSACPolicy.default_config()
    cfg.model.update(obs_shape=4, action_shape=6, actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.learn.update(learn)
    policy = DiscreteSACPolicy(cfg)
    policy.model.actor_head.init_uniform(0.0)
    return policy


def masked_batch(legal: list) -> dict:
    """One transition per entry of `legal`, whose first `legal[i]` actions are allowed."""
    size = len(legal)
    mask = torch.arange(6)[None, :] < torch.tensor(legal)[:, None]
    obs = {'observation': torch.linspace(-1, 1, size * 4).reshape(size, 4), 'action_mask': mask}
    return dict(obs=obs, next_obs=obs, action=torch.zeros(size, dtype=torch.long), reward=torch.zeros(size),
                terminated=torch.zeros(size, dtype=torch.bool))


def test_masked_temperature_loss_targets_the_entropy_of_the_legal_actions():
    """-log alpha * mean(E[log pi] + 0.98 log n_legal): with pi uniform over n legal actions,
    E[log pi] = -log n, so a state with 2 legal actions adds -0.02 log 2 and one with 1 adds 0."""
    policy = uniform_six_action_policy()
    info = policy.learn_mode.forward(masked_batch([2, 1]))
    expected = -math.log(0.2) * ((-math.log(2) + 0.98 * math.log(2)) + (0.0 + 0.0)) / 2
    assert float(info['alpha_loss']) == pytest.approx(expected, rel=1e-5)
    assert float(info['entropy']) == pytest.approx(math.log(2) / 2, rel=1e-5)


def test_alpha_stays_bounded_when_only_two_of_six_actions_are_legal():
    """Entropy log 2 is above the target 0.98 log 2, so alpha falls. Against 0.98 log 6, which no state
    with two legal actions can reach, the same 2000 Adam steps drive alpha from 0.2 to ~80."""
    policy = uniform_six_action_policy(learning_rate_q=0.0, learning_rate_policy=0.0, learning_rate_alpha=3e-3)
    batch = masked_batch([2] * 8)
    for _ in range(2000):
        info = policy.learn_mode.forward(batch)
    assert float(info['alpha']) < 0.2

    unmasked = Temperature(0.2)
    optimizer = torch.optim.Adam(unmasked.parameters(), lr=3e-3)
    for _ in range(2000):
        optimizer.zero_grad()
        unmasked.loss(torch.full((8,), -math.log(2)), 0.98 * math.log(6)).backward()
        optimizer.step()
    assert float(unmasked.value) > 50


def test_configured_target_entropy_applies_to_masked_states_as_given():
    policy = uniform_six_action_policy(target_entropy=0.5)
    info = policy.learn_mode.forward(masked_batch([2, 1]))
    expected = -math.log(0.2) * ((-math.log(2) + 0.5) + (0.0 + 0.5)) / 2
    assert float(info['alpha_loss']) == pytest.approx(expected, rel=1e-5)
