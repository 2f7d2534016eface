import io
import math

import pytest
import torch

from tidal.base.modes import Timestep
from tidal.models import Temperature
from tidal.policies import DiscreteSACPolicy
from tidal.policies.common import sample_categorical
from tidal.rl_utils import epsilon_at


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


# ----- epsilon-greedy collection (other.eps) ---------------------------------------------------

def eps_policy(**eps) -> DiscreteSACPolicy:
    """Three actions; an actor that puts all but e^-30 of its mass on action 0, so any other action comes
    from exploration."""
    cfg = DiscreteSACPolicy.default_config()
    cfg.model.update(obs_shape=4, action_shape=3, actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.other.eps.update(eps)
    policy = DiscreteSACPolicy(cfg)
    policy.model.actor_head.init_uniform(0.0)
    with torch.no_grad():
        policy.model.actor_head.logits.bias.copy_(torch.tensor([30.0, 0.0, 0.0]))
    return policy


def collect_env_steps(policy: DiscreteSACPolicy, steps: int, num_envs: int = 10) -> None:
    """Feed the collect mode `steps` env steps, `num_envs` at a time, as the collector does."""
    obs = torch.zeros(num_envs, 4)
    done = torch.zeros(num_envs, dtype=torch.bool)
    timestep = Timestep(next_obs=obs, reward=torch.zeros(num_envs), terminated=done, truncated=done, first=done)
    for _ in range(steps // num_envs):
        policy.collect_mode.process_transition(obs, {'action': torch.zeros(num_envs, dtype=torch.long)}, timestep)


@pytest.mark.parametrize('eps, expected', [
    # linear: start + (end - start) * min(1, steps / decay)
    (dict(type='linear', start=1.0, end=0.05, decay=100), {0: 1.0, 30: 0.715, 50: 0.525, 100: 0.05, 250: 0.05}),
    # exp: end + (start - end) * e^(-steps / decay); e^-1 = 0.36787944, e^-2 = 0.13533528
    (dict(type='exp', start=0.95, end=0.1, decay=50), {0: 0.95, 50: 0.41269753, 100: 0.21503499}),
])
def test_epsilon_schedule_by_hand_at_the_env_steps_collected(eps, expected):
    policy = eps_policy(**eps)
    done = 0
    for step, value in expected.items():
        collect_env_steps(policy, step - done)
        done = step
        assert policy.epsilon() == pytest.approx(value, abs=1e-7)
    assert epsilon_at(50, policy.cfg.other.eps) == pytest.approx(expected[50], abs=1e-7)


def test_eps_one_takes_uniform_allowed_actions_and_never_a_masked_one():
    torch.manual_seed(0)
    policy = eps_policy(type='linear', start=1.0, end=1.0)
    mask = torch.tensor([True, False, True]).expand(4000, 3)  # action 1 is never allowed
    actions = policy.collect_mode.forward({'observation': torch.randn(4000, 4), 'action_mask': mask})['action']
    counts = torch.bincount(actions, minlength=3)
    assert counts[1] == 0
    assert abs(counts[2].item() / 4000 - 0.5) < 0.03  # 0.5 +- 4 std: uniform over {0, 2}, not the actor's 0


def test_with_eps_off_collection_draws_exactly_what_it_did_before():
    policy = eps_policy()
    assert policy.cfg.other.eps.type is None and policy.epsilon() == 0.0
    obs = masked_obs(64)
    torch.manual_seed(1)
    actions = policy.collect_mode.forward(obs)['action']
    after = torch.rand(3)
    torch.manual_seed(1)
    _, prob, _ = policy._policy(obs)
    assert torch.equal(actions, sample_categorical(prob))  # the actor's sample, as before other.eps
    assert torch.equal(after, torch.rand(3))               # and no extra draw from the global generator


def test_collect_env_step_round_trips_through_the_collect_state_dict():
    policy = eps_policy(type='exp', start=1.0, end=0.0, decay=100)
    collect_env_steps(policy, 70)
    buffer = io.BytesIO()
    torch.save(policy.collect_mode.state_dict(), buffer)
    buffer.seek(0)
    resumed = eps_policy(type='exp', start=1.0, end=0.0, decay=100)
    resumed.collect_mode.load_state_dict(torch.load(buffer, weights_only=True))
    assert resumed.epsilon() == policy.epsilon() == pytest.approx(math.exp(-0.7))
    collect_env_steps(policy, 30)
    collect_env_steps(resumed, 30)
    assert resumed.epsilon() == policy.epsilon() == pytest.approx(math.exp(-1.0))
