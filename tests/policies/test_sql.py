"""SQL: the soft TD target (with an action mask, a terminated and a truncated row, n-step windows, importance
weights, double soft Q), Boltzmann collection beside epsilon's uniform actions, greedy evaluation, a round trip
of its learn state and a short real run, on a Q-network whose every value is set by hand."""
from __future__ import annotations

import json
import math

import pytest
import torch

from tidal.entry.pipelines import train
from tidal.policies import SQLPolicy
from tidal.worker.checkpoint import load_checkpoint, policy_state


def make_sql(alpha=0.5, **learn) -> SQLPolicy:
    """Q(s) = W s over a 1-dim observation and 2 actions: online Q(s) = [s, -s], target Q(s) = [2 s, 3 s]."""
    cfg = SQLPolicy.default_config()
    cfg.model.update(obs_shape=1, action_shape=2, encoder_hidden_size_list=[], dueling=False)
    cfg.discount_factor = 0.5
    cfg.learn.update(alpha=alpha, **learn)
    policy = SQLPolicy(cfg)
    set_linear(policy.model, [[1.0], [-1.0]])
    set_linear(policy._target.net, [[2.0], [3.0]])
    return policy


def set_linear(model, weight):
    layer = model.head.net[-1]
    with torch.no_grad():
        layer.weight.copy_(torch.tensor(weight))
        layer.bias.zero_()


def batch(rows=1, **columns):
    """s = 2, a = 1 (Q = -2), r = 1, s' = 1 (target Q = [2, 3]), neither terminated nor truncated."""
    made = {'obs': torch.full((rows, 1), 2.0), 'action': torch.ones(rows, dtype=torch.long),
            'reward': torch.ones(rows), 'next_obs': torch.ones(rows, 1),
            'terminated': torch.zeros(rows, dtype=torch.bool), 'truncated': torch.zeros(rows, dtype=torch.bool)}
    made.update(columns)
    return made


#: V(s' = 1) at alpha 0.5: 0.5 log(e^(2 / 0.5) + e^(3 / 0.5)) = 3 + 0.5 log(1 + e^-2)
SOFT_VALUE = 3 + 0.5 * math.log(1 + math.exp(-2))


def test_the_soft_target_bootstraps_from_alpha_logsumexp_of_the_target_network():
    info = make_sql().learn_mode.forward(batch())
    target = 1 + 0.5 * SOFT_VALUE  # r + gamma V(s'), 2.5317
    assert float(info['target_q_value']) == pytest.approx(target, rel=1e-6) and float(info['q_value']) == -2.0
    assert float(info['total_loss']) == pytest.approx((target + 2) ** 2, rel=1e-6)
    assert info['priority'].tolist() == pytest.approx([target + 2], rel=1e-6)


def test_the_soft_value_keeps_to_the_allowed_actions():
    obs = {'observation': torch.tensor([[2.0]]), 'action_mask': torch.tensor([[1, 1]])}
    next_obs = {'observation': torch.tensor([[1.0]]), 'action_mask': torch.tensor([[1, 0]])}
    info = make_sql().learn_mode.forward(batch(obs=obs, next_obs=next_obs))
    assert float(info['target_q_value']) == 1 + 0.5 * 2.0  # only action 0 (target Q 2) is allowed at s'


def test_a_terminated_row_does_not_bootstrap_a_truncated_one_does():
    info = make_sql().learn_mode.forward(batch(rows=3, terminated=torch.tensor([True, False, False]),
                                               truncated=torch.tensor([False, True, False])))
    # the mean of the three targets: r alone, then r + gamma V(s') twice
    assert float(info['target_q_value']) == pytest.approx((1 + 2 * (1 + 0.5 * SOFT_VALUE)) / 3, rel=1e-6)
    assert info['priority'].tolist() == pytest.approx([3.0, 3 + 0.5 * SOFT_VALUE, 3 + 0.5 * SOFT_VALUE], rel=1e-6)


def test_with_ignore_done_a_terminated_row_bootstraps_too():
    info = make_sql(ignore_done=True).learn_mode.forward(batch(terminated=torch.tensor([True])))
    assert float(info['target_q_value']) == pytest.approx(1 + 0.5 * SOFT_VALUE, rel=1e-6)


def test_an_nstep_window_discounts_its_rewards_and_the_soft_value():
    # rewards [1, 2, -] over a window of 2 steps: R = 1 + 0.5 * 2 = 2, then gamma^2 V(s')
    info = make_sql().learn_mode.forward(batch(nstep_reward=torch.tensor([[1.0, 2.0, 0.0]]),
                                               nstep_len=torch.tensor([2])))
    assert float(info['target_q_value']) == pytest.approx(2 + 0.25 * SOFT_VALUE, rel=1e-6)


def test_importance_weights_scale_each_squared_error():
    policy = make_sql(alpha=1e-3)  # V(s') = max = 3: targets 2.5
    policy.cfg.priority_IS_weight = True
    info = policy.learn_mode.forward(batch(rows=2, weight=torch.tensor([1.0, 0.25])))
    assert float(info['total_loss']) == pytest.approx((1.0 + 0.25) * 4.5 ** 2 / 2, rel=1e-5)


def test_double_soft_q_weighs_the_targets_values_by_the_online_boltzmann_policy():
    info = make_sql(alpha=1.0, double_q=True).learn_mode.forward(batch())
    # online Q(s' = 1) = [1, -1]: pi = softmax([1, -1]); V = sum pi (target Q - log pi)
    pi = [1 / (1 + math.exp(-2)), 1 / (1 + math.exp(2))]
    value = pi[0] * (2 - math.log(pi[0])) + pi[1] * (3 - math.log(pi[1]))
    assert float(info['target_q_value']) == pytest.approx(1 + 0.5 * value, rel=1e-6)


def collect_actions(policy, obs, rounds=1):
    return torch.cat([policy.collect_mode.forward(obs)['action'] for _ in range(rounds)])


def test_collection_samples_the_boltzmann_policy_of_q_over_alpha():
    policy = make_sql(alpha=1.0)
    policy.cfg.other.eps.update(type='linear', start=0.0, end=0.0)
    torch.manual_seed(0)
    actions = collect_actions(policy, torch.ones(20_000, 1))
    # Q(1) = [1, -1]: P(action 0) = e^1 / (e^1 + e^-1) = 0.8808; the count's std is 0.0023
    assert (actions == 0).float().mean().item() == pytest.approx(1 / (1 + math.exp(-2)), abs=0.01)


def test_collection_samples_only_allowed_actions_and_epsilon_draws_uniform_ones():
    policy = make_sql(alpha=1.0)
    obs = {'observation': torch.ones(4000, 1), 'action_mask': torch.tensor([[1, 1], [0, 1]]).repeat(2000, 1)}
    torch.manual_seed(0)
    policy.cfg.other.eps.update(type='linear', start=0.0, end=0.0)
    assert collect_actions(policy, obs)[1::2].eq(1).all()  # action 0 is more likely, but not allowed
    policy.cfg.other.eps.update(start=1.0, end=1.0)
    actions = collect_actions(policy, obs)
    assert (actions[0::2] == 0).float().mean().item() == pytest.approx(0.5, abs=0.04)  # uniform, not 0.88
    assert actions[1::2].eq(1).all()


def test_a_low_temperature_collects_greedily():
    policy = make_sql(alpha=1e-3)
    policy.cfg.other.eps.update(type='linear', start=0.0, end=0.0)
    obs = torch.tensor([[1.0], [-1.0]]).repeat(500, 1)
    assert collect_actions(policy, obs).tolist() == [0, 1] * 500


def test_evaluation_is_greedy_or_samples_boltzmann_from_its_own_seeded_generator():
    policy = make_sql(alpha=1.0)
    obs = {'observation': torch.ones(2, 1), 'action_mask': torch.tensor([[1, 1], [0, 1]])}
    assert policy.eval_mode.forward(obs)['action'].tolist() == [0, 1]
    policy.cfg.eval.deterministic = False
    draws = []
    for _ in range(2):
        policy.eval_mode.seed(7)
        draws.append(torch.cat([policy.eval_mode.forward(torch.ones(500, 1))['action'] for _ in range(4)]))
    assert torch.equal(draws[0], draws[1]) and 0.8 < (draws[0] == 0).float().mean().item() < 0.95


def test_the_learn_state_round_trips_with_its_update_count():
    policy = make_sql(target_update_freq=3)
    for _ in range(2):
        policy.learn_mode.forward(batch())
    copy = make_sql(target_update_freq=3)
    copy.learn_mode.load_state_dict(policy.learn_mode.state_dict())
    infos = [each.learn_mode.forward(batch()) for each in (policy, copy)]  # the third update copies the target
    assert float(infos[0]['total_loss']) == float(infos[1]['total_loss'])
    assert torch.equal(copy._target.net.head.net[-1].weight, policy._target.net.head.net[-1].weight)
    assert torch.equal(copy.model.head.net[-1].weight, policy.model.head.net[-1].weight)


def test_a_short_cartpole_run_trains_and_its_checkpoint_acts_as_the_trained_policy(tmp_path):
    result = train('cartpole_sql', seed=0, max_env_step=400, progress=False,
                   overrides=['policy.random_collect_size=80', 'env.evaluator_env_num=1', 'env.n_evaluator_episode=1',
                              'policy.learn.learner.log_freq=20', f'exp_name={tmp_path / "sql"}'])
    summary = json.loads((result.run_dir / 'summary.json').read_text())
    assert summary['env_step'] == 400 and summary['train_iter'] == (400 - 80) // 8 * 3
    assert 'target_q_value=' in (result.run_dir / 'log.txt').read_text()
    fresh = SQLPolicy(result.policy.cfg)
    state = policy_state(load_checkpoint(result.run_dir / 'ckpt' / 'latest.pt'), 'latest.pt')
    fresh.learn_mode.load_state_dict(state)
    obs = torch.randn(64, 4, generator=torch.Generator().manual_seed(0))
    assert torch.equal(fresh.eval_mode.forward(obs)['action'], result.policy.eval_mode.forward(obs)['action'])
    assert torch.equal(fresh.model(obs), result.policy.model(obs))
