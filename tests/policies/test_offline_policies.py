"""The offline policies' updates against their papers' equations, worked on networks set by hand or recomputed
independently: TD3+BC's actor loss (eq. 3), IQL's expectile value, critic and advantage-weighted actor losses (eqs.
5-7) in their order, CQL's penalty (eq. 4) from the update's own proposals, behaviour cloning's losses, and the
dataset's normalisation in learning, acting and export."""
from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch.distributions import Normal
from torch.testing import assert_close

from tidal.models.mlp import EnsembleLayerNorm
from tidal.policies import BCPolicy, CQLPolicy, DiscreteCQLPolicy, IQLPolicy, ReBRACPolicy, TD3BCPolicy
from tidal.rl_utils import tanh_gaussian_sample


def build(cls, normalize=False, model=(), **learn):
    cfg = cls.default_config()
    cfg.model.update(obs_shape=1, action_shape=1, actor_hidden_sizes=[], **dict(model))
    if cls is not BCPolicy:
        cfg.model.update(critic_hidden_sizes=[])
    cfg.collect.normalize_states = normalize
    cfg.learn.update(discount_factor=0.5, **learn)
    return cls(cfg)


def set_critics(critic, rows):
    """Q_i(s, a) = rows[i][0] s + rows[i][1] a."""
    with torch.no_grad():
        layer = critic.q.net[0]
        for index, row in enumerate(rows):
            layer.weight[index, :, 0] = torch.tensor(row)
        layer.bias.zero_()


def batch(obs=2.0, action=0.5, reward=1.0, next_obs=1.0, terminated=False):
    return {'obs': torch.tensor([[obs]]), 'action': torch.tensor([[action]]), 'reward': torch.tensor([reward]),
            'next_obs': torch.tensor([[next_obs]]), 'terminated': torch.tensor([terminated]),
            'truncated': torch.tensor([False])}


# ----- TD3+BC -------------------------------------------------------------------------------------
def td3_bc(normalize=False):
    policy = build(TD3BCPolicy, normalize=normalize)
    with torch.no_grad():
        policy.model.actor_head.mu.weight.fill_(0.5)  # mu(s) = tanh(0.5 s)
        policy.model.actor_head.mu.bias.zero_()
    set_critics(policy.model.critic, [[1.0, 2.0], [1.0, -1.0]])  # Q1 = s + 2a
    return policy


def test_td3_bc_actor_loss_is_minus_alpha_plus_the_squared_error_for_one_positive_q():
    loss, info = td3_bc()._actor_loss(batch())
    pi = math.tanh(1.0)  # mu(2)
    # lambda = 2.5 / |Q1(2, pi)|, so -lambda Q1 = -2.5; then (pi - 0.5)^2
    assert float(loss.detach()) == pytest.approx(-2.5 + (pi - 0.5) ** 2)
    assert float(info['lambda']) == pytest.approx(2.5 / (2 + 2 * pi))
    assert float(info['bc_loss']) == pytest.approx((pi - 0.5) ** 2)


def test_td3_bc_reports_its_actor_values_in_updates_without_an_actor_step():
    policy = td3_bc()
    first = policy.learn_mode.forward(batch())  # a critic step alone (actor_update_freq 2)
    assert float(first['bc_loss']) == 0.0 and float(first['lambda']) == 0.0
    second = policy.learn_mode.forward(batch())
    third = policy.learn_mode.forward(batch())
    assert float(second['bc_loss']) > 0 and float(third['bc_loss']) == float(second['bc_loss'])


def test_observations_are_normalised_by_the_dataset_statistics_in_learning_acting_and_export():
    policy = td3_bc(normalize=True)
    statistics = policy.collect_mode.running_statistics()['obs_rms']
    statistics.load_state_dict({'mean': torch.tensor([1.0], dtype=torch.float64),
                                'var': torch.tensor([4.0], dtype=torch.float64), 'count': torch.tensor(10.0)})
    normalised = batch(obs=3.0, next_obs=5.0)
    policy._learn_plan(normalised)
    assert_close(normalised['obs'], torch.tensor([[1.0]])) and assert_close(normalised['next_obs'], torch.tensor([[2.0]]))
    obs = torch.tensor([[3.0], [-1.0]])  # normalised: 1 and -1
    expected = torch.tanh(0.5 * torch.tensor([[1.0], [-1.0]]))
    assert_close(policy.eval_mode.forward(obs)['action'], expected)
    assert_close(policy.export_actor()(obs), expected)
    assert 'obs_rms' in policy.learn_mode.state_dict()


# ----- IQL ---------------------------------------------------------------------------------------
def iql(**learn):
    policy = build(IQLPolicy, model={'value_hidden_sizes': [8]}, **learn)
    torch.manual_seed(0)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.5)
    policy._target_critic.net.load_state_dict(policy.model.critic.state_dict())
    set_critics(policy._target_critic.net, [[1.0, 2.0], [0.5, 1.0]])  # min Q'(2, 0.5) = min(3, 1.5) = 1.5
    return policy


def test_iql_value_loss_is_the_expectile_of_the_smaller_target_critic_less_v():
    policy = iql()
    data = batch()
    policy._read_before_steps(data)
    loss, info = policy._value_loss(data)
    value = policy.model.value(torch.tensor([[2.0]]))
    advantage = 1.5 - value
    weight = torch.where(advantage < 0, 0.3, 0.7)
    assert_close(loss, (weight * advantage.pow(2)).mean())
    assert_close(data['advantage'], advantage.detach())
    assert_close(data['next_value'], policy.model.value(torch.tensor([[1.0]])).detach())


def test_iql_reads_v_and_the_advantage_before_vs_step():
    policy = iql(learning_rate_value=0.5)
    data = batch()
    before = policy.model.value(torch.tensor([[1.0], [2.0]])).detach()
    plan = policy._learn_plan(data)
    assert plan.stages[0].optimizer is policy._optimizer_value
    policy.learn_mode.forward(batch())  # V steps, so reading it again would give other values
    assert_close(data['next_value'], before[:1]) and assert_close(data['advantage'], 1.5 - before[1:])
    assert not torch.allclose(policy.model.value(torch.tensor([[1.0]])), before[:1])


def test_iql_critics_regress_to_the_reward_plus_the_discounted_value_before_its_step():
    policy = iql()
    data = batch(terminated=False)
    data['next_value'] = torch.tensor([4.0])  # r + 0.5 * 4 = 3
    loss, _ = policy._critic_loss(data)
    q = policy.model.critic(data['obs'], data['action'])
    assert_close(loss, (q - 3.0).pow(2).mean())  # averaged over the two critics
    data['terminated'] = torch.tensor([True])
    loss, _ = policy._critic_loss(data)
    assert_close(loss, (q - 1.0).pow(2).mean())


def test_iql_actor_maximises_the_advantage_weighted_log_likelihood_of_the_data_action():
    policy = iql()
    data = {**batch(), 'advantage': torch.tensor([0.4])}
    loss, info = policy._policy_loss(data)
    mu, log_std = policy.model.actor(data['obs'])
    log_prob = Normal(torch.tanh(mu), log_std.exp()).log_prob(data['action']).sum(-1)
    assert_close(loss, -(math.exp(3.0 * 0.4) * log_prob).mean())
    assert float(info['advantage_weight']) == pytest.approx(math.exp(1.2))
    data['advantage'] = torch.tensor([5.0])  # exp(15) is clipped at 100
    loss, _ = policy._policy_loss(data)
    assert_close(loss, -(100.0 * log_prob).mean())


def test_iql_actor_has_one_learnt_log_std_per_action_dimension():
    policy = iql()
    _, first = policy.model.actor(torch.tensor([[1.0]]))
    _, second = policy.model.actor(torch.tensor([[-3.0]]))
    assert torch.equal(first, second)


def test_iql_update_steps_value_critics_actor_and_moves_the_targets():
    policy = iql(target_theta=0.5)
    before = {name: value.clone() for name, value in policy.model.state_dict().items()}
    target_before = {name: value.clone() for name, value in policy._target_critic.net.state_dict().items()}
    info = policy.learn_mode.forward(batch())
    after = policy.model.state_dict()
    for prefix in ('value.', 'critic.', 'actor_'):
        assert any(not torch.equal(before[name], after[name]) for name in before if name.startswith(prefix)), prefix
    for name, value in policy._target_critic.net.state_dict().items():
        assert_close(value, (target_before[name] + after[f'critic.{name}']) / 2)
    assert set(info) >= {'value_loss', 'critic_loss', 'policy_loss', 'advantage_weight', 'policy_lr'}


def test_iql_actor_learning_rate_decays_along_a_cosine_to_zero():
    policy = iql(policy_lr_decay_iters=4, learning_rate_policy=1.0)
    rates = [float(policy.learn_mode.forward(batch())['policy_lr']) for _ in range(6)]
    assert rates == pytest.approx([1.0, (1 + math.cos(math.pi / 4)) / 2, 0.5, (1 + math.cos(3 * math.pi / 4)) / 2,
                                   0.0, 0.0])


def test_iql_evaluates_the_squashed_mean_and_collects_a_clipped_gaussian_sample():
    policy = iql()
    obs = torch.tensor([[0.3]])
    mu, log_std = policy.model.actor(obs)
    assert_close(policy.eval_mode.forward(obs)['action'], torch.tanh(mu))
    torch.manual_seed(3)
    noise = torch.randn(1, 1)
    torch.manual_seed(3)
    assert_close(policy.collect_mode.forward(obs)['action'], (torch.tanh(mu) + log_std.exp() * noise).clamp(-1, 1))


# ----- CQL ---------------------------------------------------------------------------------------
def cql(**learn):
    policy = build(CQLPolicy, num_action_samples=3, **learn)
    torch.manual_seed(1)
    with torch.no_grad():
        for parameter in policy.model.parameters():
            parameter.copy_(torch.randn_like(parameter) * 0.5)
    return policy


def cql_batch(policy):
    data = {'obs': torch.tensor([[2.0], [-1.0]]), 'action': torch.tensor([[0.5], [-0.2]]),
            'reward': torch.tensor([1.0, 0.0]), 'next_obs': torch.tensor([[1.0], [0.5]]),
            'terminated': torch.tensor([False, True]), 'truncated': torch.tensor([False, False])}
    torch.manual_seed(2)
    policy._draw_update_noise(data)
    return data


def test_cql_penalty_is_the_log_sum_exp_over_its_proposals_less_the_data_value():
    policy = cql()
    data = cql_batch(policy)
    loss, info = policy._critic_loss(data)
    critic, actor = policy.model.critic, policy.model.actor
    penalties = torch.zeros(2)
    for row in range(2):
        obs = data['obs'][row:row + 1]
        terms = [[] for _ in range(2)]
        for sample in range(3):
            proposals = [(data['cql_uniform'][sample, row:row + 1], torch.tensor(-math.log(2.0)))]
            for source, noise in ((obs, data['cql_noise']), (data['next_obs'][row:row + 1], data['cql_next_noise'])):
                action, log_prob = tanh_gaussian_sample(*actor(source), noise=noise[sample, row:row + 1])
                proposals.append((action, log_prob[0]))
            for action, log_density in proposals:
                q = critic(obs, action)[:, 0]
                for index in range(2):
                    terms[index].append(q[index] - log_density)
        q_data = critic(obs, data['action'][row:row + 1])[:, 0]
        for index in range(2):
            penalties[index] += (torch.logsumexp(torch.stack(terms[index]), 0) - q_data[index]) / 2
    assert_close(info['cql_penalty'], penalties.mean().detach())
    td_losses, *_ = policy._critic_terms(data)
    assert_close(loss, td_losses.sum() + 5.0 * penalties.sum())


def test_cql_target_leaves_out_the_entropy_term_unless_backup_entropy():
    for backup in (False, True):
        policy = cql(backup_entropy=backup)
        data = cql_batch(policy)
        _, _, _, next_value = policy._critic_terms(data)
        next_action, next_log_prob = tanh_gaussian_sample(*policy.model.actor(data['next_obs']), noise=data['next_noise'])
        next_q = policy._target_critic(data['next_obs'], next_action).min(dim=0).values
        expected = next_q - policy._temperature.value * next_log_prob if backup else next_q
        assert_close(next_value, expected.detach())


# ----- behaviour cloning -------------------------------------------------------------------------
def test_bc_regresses_the_actor_on_the_data_action_and_acts_with_it():
    policy = build(BCPolicy)
    data = batch()
    loss, _ = policy._loss(data)
    assert_close(loss, (policy.model.actor(data['obs']) - data['action']).pow(2).mean())
    assert_close(policy.eval_mode.forward(data['obs'])['action'], policy.model.actor(data['obs']).detach())
    assert not hasattr(policy.model, 'critic')


def test_discrete_bc_fits_logits_by_cross_entropy_and_acts_greedily():
    cfg = BCPolicy.default_config()
    cfg.update(continuous=False)
    cfg.model.update(obs_shape=2, action_shape=3)
    cfg.collect.normalize_states = False
    policy = BCPolicy(cfg)
    obs = torch.tensor([[0.1, -0.3], [1.0, 2.0]])
    action = torch.tensor([2, 0])
    loss, info = policy._loss({'obs': obs, 'action': action})
    assert_close(loss, F.cross_entropy(policy.model(obs), action))
    assert torch.equal(policy.eval_mode.forward(obs)['action'], policy.model(obs).argmax(dim=-1))
    assert BCPolicy.action_space_of(cfg) == 'discrete'


def test_bc_sgd_with_momentum_and_weight_decay_as_di_engines_bc_default():
    policy = build(BCPolicy, optimizer='sgd', momentum=0.9, weight_decay=1e-4, learning_rate=0.1)
    group = policy._optimizer.param_groups[0]
    assert isinstance(policy._optimizer, torch.optim.SGD) and (group['momentum'], group['weight_decay']) == (0.9, 1e-4)
    adam_w = build(BCPolicy, weight_decay=1e-4)._optimizer
    assert isinstance(adam_w, torch.optim.AdamW) and adam_w.param_groups[0]['weight_decay'] == 1e-4


# ----- discrete CQL ------------------------------------------------------------------------------
def test_discrete_cql_adds_the_weighted_log_sum_exp_penalty_to_dqns_td_loss():
    cfg = DiscreteCQLPolicy.default_config()
    cfg.model.update(obs_shape=1, action_shape=2, encoder_hidden_size_list=[], dueling=False)
    cfg.learn.update(cql_weight=0.5, double_q=False)
    cfg.update(discount_factor=0.5)
    cfg.collect.normalize_states = False
    policy = DiscreteCQLPolicy(cfg)
    head = [module for module in policy.model.modules() if isinstance(module, torch.nn.Linear)][-1]
    with torch.no_grad():  # Q(s) = [s, 2 s] in the network and its target
        head.weight.copy_(torch.tensor([[1.0], [2.0]]))
        head.bias.zero_()
        policy._target.net.load_state_dict(policy.model.state_dict())
    data = {'obs': torch.tensor([[1.0]]), 'action': torch.tensor([0]), 'reward': torch.tensor([1.0]),
            'next_obs': torch.tensor([[2.0]]), 'terminated': torch.tensor([False]), 'truncated': torch.tensor([False])}
    loss, info = policy._q_loss(data)
    td = (1.0 + 0.5 * 4.0 - 1.0) ** 2  # y = r + gamma max_a Q_target(2, a) = 1 + 0.5 * 4, Q(1, 0) = 1
    penalty = math.log(math.e + math.e ** 2) - 1.0
    assert float(loss.detach()) == pytest.approx(td + 0.5 * penalty)
    assert (float(info['td_loss']), float(info['cql_penalty'])) == (pytest.approx(td), pytest.approx(penalty))
    assert DiscreteCQLPolicy.pipeline == 'offline'


# ----- ReBRAC ------------------------------------------------------------------------------------
def rebrac(**learn):
    policy = build(ReBRACPolicy, model={'critic_layer_norm': False}, actor_bc_coef=0.5, critic_bc_coef=2.0, **learn)
    with torch.no_grad():
        policy.model.actor_head.mu.weight.fill_(0.5)
        policy.model.actor_head.mu.bias.zero_()
        policy._target.net.actor_head.mu.weight.fill_(1.0)
        policy._target.net.actor_head.mu.bias.zero_()
    set_critics(policy.model.critic, [[1.0, 2.0], [1.0, -1.0]])
    set_critics(policy._target.net.critic, [[1.0, 2.0], [0.0, 3.0]])
    return policy


def test_rebrac_target_subtracts_the_distance_of_the_target_action_from_the_datasets_next_action():
    data = {**batch(next_obs=0.0), 'next_action': torch.tensor([[0.1]]), 'target_noise': torch.tensor([[0.3]])}
    _, info = rebrac()._critic_loss(data)
    # a' = mu'(0) + 0.3 = 0.3; min(Q1' = 0.6, Q2' = 0.9) = 0.6; penalty 2 * (0.3 - 0.1)^2 = 0.08
    assert float(info['target_q_value']) == pytest.approx(1.0 + 0.5 * (0.6 - 0.08))


def test_rebrac_actor_loss_weighs_the_squared_distance_against_q_over_its_mean_magnitude():
    loss, info = rebrac()._actor_loss(batch())
    pi = math.tanh(1.0)
    q_min = min(2 + 2 * pi, 2 - pi)  # Q1 = s + 2a, Q2 = s - a at s = 2
    # beta_1 (pi - a)^2 - Q / |Q| for one positive Q
    assert float(loss.detach()) == pytest.approx(0.5 * (pi - 0.5) ** 2 - 1.0)
    assert float(info['bc_loss']) == pytest.approx((pi - 0.5) ** 2) and q_min > 0


def test_rebrac_critics_carry_a_layer_norm_of_their_own_after_every_hidden_layer():
    cfg = ReBRACPolicy.default_config()
    cfg.model.update(obs_shape=3, action_shape=1)
    policy = ReBRACPolicy(cfg)
    norms = [layer for layer in policy.model.critic.q.net if isinstance(layer, EnsembleLayerNorm)]
    assert len(norms) == 3 and norms[0].weight.shape == (2, 1, 256)
    assert policy._cfg.learn.batch_size == 1024 and policy._cfg.learn.target_update == 'with_actor'
    hidden = torch.randn(2, 5, 256)
    expected = torch.stack([F.layer_norm(hidden[i], (256,)) for i in range(2)])
    with torch.no_grad():
        norms[0].weight[1].fill_(2.0)
    expected[1] *= 2.0
    assert_close(norms[0](hidden), expected)
