"""DQN: the double-Q target, the action mask, the target network's schedule, epsilon-greedy collection, the
loss forms, and a round trip of its learn state, on a Q-network whose every value is set by hand; and the beta
schedule its default config gives prioritized replay."""
from __future__ import annotations

import pytest
import torch
from torch.testing import assert_close

from tidal.config import compile_config, resolve_config_source
from tidal.policies import DQNPolicy
from tidal.worker.feeds.replay import build_replay_buffer
from tidal.worker.prioritized_buffer import PrioritizedReplayBuffer


def make_dqn(**learn) -> DQNPolicy:
    """Q(s) = W s + b over a 1-dim observation and 2 actions: no hidden layer, no dueling."""
    cfg = DQNPolicy.default_config()
    cfg.model.update(obs_shape=1, action_shape=2, encoder_hidden_size_list=[], dueling=False)
    cfg.discount_factor = 0.5
    cfg.learn.update(learn)
    policy = DQNPolicy(cfg)
    set_linear(policy.model, [[1.0], [-1.0]])          # online: Q(s) = [s, -s]
    set_linear(policy._target.net, [[2.0], [3.0]])     # target: Q(s) = [2 s, 3 s]
    return policy


def set_linear(model, weight):
    layer = model.head.net[-1]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.zero_()


def batch(terminated=False, next_obs=None):
    return {'obs': torch.tensor([[2.0]]), 'action': torch.tensor([1]), 'reward': torch.tensor([1.0]),
            'next_obs': torch.tensor([[1.0]]) if next_obs is None else next_obs,
            'terminated': torch.tensor([terminated]), 'truncated': torch.tensor([False])}


def test_the_double_q_target_takes_the_online_argmax_valued_by_the_target():
    # s' = 1: the online network prefers action 0 (1 > -1), which the target values at 2; y = 1 + 0.5 * 2 = 2.
    # Q(s=2, a=1) = -2, so the squared TD error is (2 - (-2))^2 = 16
    info = make_dqn().learn_mode.forward(batch())
    assert float(info['target_q_value']) == 2.0 and float(info['q_value']) == -2.0
    assert float(info['total_loss']) == 16.0 and info['priority'].tolist() == [4.0]


def test_without_double_q_the_target_takes_its_own_max():
    info = make_dqn(double_q=False).learn_mode.forward(batch())
    assert float(info['target_q_value']) == 1 + 0.5 * 3  # max of the target's [2, 3]


def test_a_terminated_transition_does_not_bootstrap_a_truncated_one_does():
    assert float(make_dqn().learn_mode.forward(batch(terminated=True))['target_q_value']) == 1.0
    truncated = {**batch(), 'truncated': torch.tensor([True])}
    assert float(make_dqn().learn_mode.forward(truncated)['target_q_value']) == 2.0


def test_the_bootstrap_keeps_to_the_allowed_actions():
    cfg_obs = {'observation': torch.tensor([[2.0]]), 'action_mask': torch.tensor([[1, 1]])}
    next_obs = {'observation': torch.tensor([[1.0]]), 'action_mask': torch.tensor([[0, 1]])}
    masked = {**batch(next_obs=next_obs), 'obs': cfg_obs}
    # only action 1 is allowed at s': the online argmax is 1, valued 3 by the target
    assert float(make_dqn().learn_mode.forward(masked)['target_q_value']) == 1 + 0.5 * 3


def test_the_huber_loss_is_linear_beyond_one():
    assert float(make_dqn(loss='huber').learn_mode.forward(batch())['total_loss']) == 4.0 - 0.5


def test_the_target_network_is_copied_every_target_update_freq_updates():
    policy = make_dqn(target_update_freq=2)
    target_weight = lambda: policy._target.net.head.net[-1].weight.detach().clone()
    before = target_weight()
    policy.learn_mode.forward(batch())
    assert torch.equal(target_weight(), before)
    policy.learn_mode.forward(batch())
    assert torch.equal(target_weight(), policy.model.head.net[-1].weight.detach())


def test_with_target_update_freq_zero_the_target_follows_by_polyak_averaging():
    policy = make_dqn(target_update_freq=0, target_theta=0.25)
    before = policy._target.net.head.net[-1].weight.detach().clone()
    policy.learn_mode.forward(batch())
    online = policy.model.head.net[-1].weight.detach()
    assert_close(policy._target.net.head.net[-1].weight.detach(), 0.75 * before + 0.25 * online)


@pytest.mark.parametrize('epsilon, expected', [(0.0, [0, 0, 1, 1]), (1.0, None)])
def test_collection_is_epsilon_greedy(epsilon, expected):
    policy = make_dqn()
    policy.cfg.other.eps.update(type='linear', start=epsilon, end=epsilon)
    obs = {'observation': torch.ones(4, 1), 'action_mask': torch.tensor([[1, 1], [1, 1], [0, 1], [0, 1]])}
    actions = torch.stack([policy.collect_mode.forward(obs)['action'] for _ in range(200)])
    if expected is not None:
        assert actions[0].tolist() == expected  # Q(1) = [1, -1]: action 0 where it is allowed
    else:
        assert set(actions[:, 0].tolist()) == {0, 1} and set(actions[:, 2].tolist()) == {1}  # random, allowed


def test_evaluation_is_greedy_among_the_allowed_actions():
    policy = make_dqn()
    obs = {'observation': torch.ones(2, 1), 'action_mask': torch.tensor([[1, 1], [0, 1]])}
    assert policy.eval_mode.forward(obs)['action'].tolist() == [0, 1]


def test_the_learn_state_round_trips_with_its_update_count():
    policy = make_dqn(target_update_freq=3)
    for _ in range(2):
        policy.learn_mode.forward(batch())
    copy = make_dqn(target_update_freq=3)
    copy.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    for each in (policy, copy):  # the third update copies the target in both
        each.learn_mode.forward(batch())
    assert torch.equal(copy._target.net.head.net[-1].weight, policy._target.net.head.net[-1].weight)
    assert torch.equal(copy.model.head.net[-1].weight, policy.model.head.net[-1].weight)


def test_the_default_config_anneals_prioritized_replay_beta_over_20k_batches():
    # beta = 0.4 + (1 - 0.4) * k / 20000 after k sampled batches: 0.46 at k = 2000
    cfg = compile_config(*resolve_config_source('cartpole_dqn'), overrides=['policy.priority=true'])
    buffer = build_replay_buffer(cfg, torch.device('cpu'), seed=0)
    assert isinstance(buffer, PrioritizedReplayBuffer) and buffer.beta == 0.4
    buffer.extend({'obs': torch.zeros(2, 4), 'reward': torch.zeros(2)})
    for _ in range(2000):
        buffer.sample(1)
    assert buffer.beta == pytest.approx(0.46)
