"""DDPG and TD3: the smoothed, clipped twin-critic target, the delayed actor, the deterministic policy gradient,
collection noise, n-step targets and a round trip of the learn state, on networks whose every value is set by
hand (one linear actor, linear critics over [s, a])."""
from __future__ import annotations

import copy

import pytest
import torch
from torch.testing import assert_close

from tidal.policies import DDPGPolicy, TD3Policy


def make(cls=TD3Policy, **learn):
    """actor mu(s) = tanh(0.5 s); online critics Q1 = s + 2a, Q2 = s - a; target actor mu'(s) = tanh(s), target
    critics Q1' = s + 2a, Q2' = 3a (Q2' absent for DDPG's single critic)."""
    cfg = cls.default_config()
    cfg.model.update(obs_shape=1, action_shape=1, actor_hidden_sizes=[], critic_hidden_sizes=[])
    cfg.learn.update(discount_factor=0.5, **learn)
    policy = cls(cfg)
    set_networks(policy.model, actor=0.5, critics=[[1.0, 2.0], [1.0, -1.0]])
    set_networks(policy._target.net, actor=1.0, critics=[[1.0, 2.0], [0.0, 3.0]])
    return policy


def set_networks(model, actor, critics):
    with torch.no_grad():
        model.actor_head.mu.weight.fill_(actor)
        model.actor_head.mu.bias.zero_()
        layer = model.critic.q.net[0]
        for index in range(layer.weight.shape[0]):
            layer.weight[index, :, 0] = torch.tensor(critics[index])
        layer.bias.zero_()


def batch(next_obs=1.0, terminated=False, truncated=False):
    return {'obs': torch.tensor([[2.0]]), 'action': torch.tensor([[0.5]]), 'reward': torch.tensor([1.0]),
            'next_obs': torch.tensor([[next_obs]]), 'terminated': torch.tensor([terminated]),
            'truncated': torch.tensor([truncated])}


def test_the_target_is_the_smaller_target_critic_at_the_clipped_smoothed_action():
    # mu'(s'=0) = 0; the noise 0.8 is clipped to 0.5, so a' = 0.5: Q1' = 0 + 1 = 1, Q2' = 1.5, y = 1 + 0.5 * 1
    # online Q1(2, 0.5) = 3, Q2(2, 0.5) = 1.5: squared errors 1.5^2 + 0^2
    loss, info = make()._critic_loss({**batch(next_obs=0.0), 'target_noise': torch.tensor([[0.8]])})
    assert float(info['target_q_value']) == 1.5
    assert float(loss.detach()) == pytest.approx(2.25) and float(info['twin_critic_loss']) == 0.0
    assert info['priority'].tolist() == [0.75]  # |TD error| averaged over the two critics


def test_the_smoothed_target_action_stays_in_the_action_range():
    # mu'(s'=1) = tanh(1) = 0.7616; + the noise clipped to 0.5 -> 1.26, kept at 1: Q1' = 1 + 2 = 3, Q2' = 3
    _, info = make()._critic_loss({**batch(), 'target_noise': torch.tensor([[0.8]])})
    assert float(info['target_q_value']) == pytest.approx(1 + 0.5 * 3)
    # a negative draw below the range is clipped to -0.5: a' = 0.2616, Q1' = 1.5232, Q2' = 0.7848
    _, info = make()._critic_loss({**batch(), 'target_noise': torch.tensor([[-3.0]])})
    assert float(info['target_q_value']) == pytest.approx(1 + 0.5 * 3 * (torch.tanh(torch.tensor(1.0)).item() - 0.5))


def test_ddpg_bootstraps_from_its_one_critic_at_the_target_actors_own_action():
    policy = make(DDPGPolicy)
    assert policy.model.critic.q.net[0].weight.shape[0] == 1
    _, info = policy._critic_loss(batch())
    assert float(info['target_q_value']) == pytest.approx(1 + 0.5 * (1 + 2 * torch.tanh(torch.tensor(1.0)).item()))
    assert 'twin_critic_loss' not in info


def test_a_terminated_transition_does_not_bootstrap_a_truncated_one_does():
    policy = make()
    _, info = policy._critic_loss({**batch(terminated=True), 'target_noise': torch.zeros(1, 1)})
    assert float(info['target_q_value']) == 1.0
    _, info = policy._critic_loss({**batch(next_obs=0.0, truncated=True), 'target_noise': torch.zeros(1, 1)})
    assert float(info['target_q_value']) == 1.0 + 0.5 * 0.0  # a' = 0: both target critics give 0


def test_an_nstep_window_sums_its_rewards_and_bootstraps_with_gamma_to_its_length():
    # rewards 1 and 2 over a window of 2: R = 1 + 0.5 * 2 = 2, then gamma^2 * min(Q1', Q2') at a' = 0.5 -> 0.25 * 1
    window = {**batch(next_obs=0.0), 'nstep_reward': torch.tensor([[1.0, 2.0, 0.0]]), 'nstep_len': torch.tensor([2]),
              'target_noise': torch.tensor([[0.5]])}
    _, info = make()._critic_loss(window)
    assert float(info['target_q_value']) == pytest.approx(2.0 + 0.25 * 1.0)


def test_the_actor_loss_is_minus_the_first_critic_at_the_actors_action():
    policy = make()
    loss, info = policy._actor_loss(batch())
    # mu(2) = tanh(1); Q1(2, tanh(1)) = 2 + 2 tanh(1)
    assert float(loss.detach()) == pytest.approx(-(2 + 2 * torch.tanh(torch.tensor(1.0)).item()))
    loss.backward()
    # d(-Q1)/dw = -2 (1 - tanh(1)^2) * 2
    expected = -2 * (1 - torch.tanh(torch.tensor(1.0)) ** 2) * 2
    assert_close(policy.model.actor_head.mu.weight.grad, expected.reshape(1, 1))


def test_the_actor_steps_every_actor_update_freq_updates_and_the_targets_follow_every_update():
    policy = make(actor_update_freq=2, target_theta=0.5)
    actor = policy.model.actor_head.mu.weight.clone()
    target_actor = policy._target.net.actor_head.mu.weight.clone()
    first = policy.learn_mode.forward(batch())
    assert torch.equal(policy.model.actor_head.mu.weight, actor) and float(first['actor_loss']) == 0.0
    # the Polyak step at theta 0.5 moved the target actor half way to the (unchanged) online one
    assert_close(policy._target.net.actor_head.mu.weight, (target_actor + actor) / 2)
    second = policy.learn_mode.forward(batch())
    assert not torch.equal(policy.model.actor_head.mu.weight, actor) and float(second['actor_loss']) != 0.0
    third = policy.learn_mode.forward(batch())
    assert float(third['actor_loss']) == float(second['actor_loss'])  # reported from the latest actor step


def test_with_actor_the_targets_move_only_in_the_updates_that_step_the_actor():
    policy = make(actor_update_freq=2, target_theta=0.5, target_update='with_actor')
    target = policy._target.net.state_dict()
    before = {name: value.clone() for name, value in target.items()}
    policy.learn_mode.forward(batch())  # a critic step alone: the targets stay
    assert all(torch.equal(target[name], value) for name, value in before.items())
    critic = {name: value.clone() for name, value in policy.model.state_dict().items()}
    policy.learn_mode.forward(batch())  # critic and actor: one Polyak step of theta 0.5 toward the stepped model
    online = policy.model.state_dict()
    for name, value in before.items():
        assert_close(target[name], (value + online[name]) / 2), name
    assert not torch.equal(online['actor_head.mu.weight'], critic['actor_head.mu.weight'])


def test_collection_adds_clipped_gaussian_noise_and_evaluation_acts_deterministically():
    policy = make(TD3Policy)
    policy._cfg.collect.noise_sigma = 0.5
    obs = torch.full((4000, 1), 2.0)  # mu(2) = tanh(1) = 0.7616
    torch.manual_seed(0)
    actions = policy.collect_mode.forward(obs)['action']
    mean = torch.tanh(torch.tensor(1.0))
    assert float(actions.max()) == 1.0 and float(actions.min()) >= -1.0
    below = actions[actions < 1.0]  # the unclipped draws below the bound: a Gaussian cut at 1
    assert float((actions == 1.0).float().mean()) == pytest.approx(0.3176, abs=0.03)  # P(N(0, 0.5) > 0.2384)
    assert float(below.mean()) < float(mean)
    assert_close(policy.eval_mode.forward(obs[:2])['action'], mean.expand(2, 1))


def test_the_exported_actor_acts_as_evaluation_does():
    policy = make()
    obs = torch.tensor([[0.3], [-1.2]])
    assert_close(policy.export_actor()(obs), policy.eval_mode.forward(obs)['action'])
    with pytest.raises(Exception, match='takes no action mask'):
        policy.export_actor(action_mask=True)


def test_the_learn_state_round_trips():
    policy = make(actor_update_freq=2)
    for _ in range(3):
        policy.learn_mode.forward(batch())
    state = copy.deepcopy(policy.learn_mode.state_dict())  # as a checkpoint holds it, not the live tensors
    restored = make(actor_update_freq=2)
    restored.learn_mode.load_state_dict(state)
    torch.manual_seed(1)
    after = policy.learn_mode.forward(batch())
    torch.manual_seed(1)
    again = restored.learn_mode.forward(batch())
    assert float(after['critic_loss']) == float(again['critic_loss'])
    assert float(after['actor_loss']) == float(again['actor_loss'])  # the fourth update steps the actor on both
    for (name, a), (_, b) in zip(policy.model.state_dict().items(), restored.model.state_dict().items()):
        assert torch.equal(a, b), name
