"""A2C: its update against the hand-computed loss of a policy whose every weight is set, the GAE advantages its
rollouts carry, one pass over each rollout, a round trip of its learn state, export, and a short run of the zoo
config."""
import json
import math

import pytest
import torch

from tidal.base.errors import ConfigError
from tidal.entry.pipelines import train
from tidal.entry.setup import load_config
from tidal.policies import A2CPolicy

from test_ppo import GAMMA, LAM, random_rollout, two_env_rollout  # tests/policies is on the import path

LN2 = math.log(2.0)


def make_a2c(action_space='discrete', action_shape=2, model=(), **sections) -> A2CPolicy:
    cfg = A2CPolicy.default_config()
    cfg.model.update({'obs_shape': 3, 'action_shape': action_shape, 'action_space': action_space,
                      'encoder_hidden_sizes': [16, 16], **dict(model)})
    cfg.collect.update(discount_factor=GAMMA, gae_lambda=LAM)
    for section, values in sections.items():
        cfg[section].update(values)
    return A2CPolicy(cfg)


def uniform_a2c(**learn) -> A2CPolicy:
    """No hidden layer, zero policy weights (pi = (1/2, 1/2) everywhere) and V(s) = 1."""
    policy = make_a2c(model=dict(encoder_hidden_sizes=[], share_encoder=True), learn=learn)
    with torch.no_grad():
        for layer in (policy.model.policy_head.logits, policy.model.value_head):
            layer.weight.zero_()
            layer.bias.zero_()
        policy.model.value_head.bias.fill_(1.0)
    return policy


def batch():
    return {'obs': torch.randn(2, 3), 'action': torch.tensor([0, 1]), 'advantage': torch.tensor([2.0, -1.0]),
            'return': torch.tensor([3.0, 0.0]), 'value': torch.tensor([1.0, 1.0])}


def test_the_update_is_the_hand_computed_a2c_loss():
    info = uniform_a2c().learn_mode.forward(batch())
    # log pi = -ln 2 for either action: policy loss -mean(-ln2 * [2, -1]) = ln2 / 2; value loss mean(2^2, 1^2) = 2.5;
    # entropy ln 2; with DI-engine's weights 0.5 and 0.01
    assert float(info['policy_loss']) == pytest.approx(LN2 / 2)
    assert float(info['value_loss']) == pytest.approx(2.5)
    assert float(info['entropy']) == pytest.approx(LN2)
    assert float(info['total_loss']) == pytest.approx(LN2 / 2 + 0.5 * 2.5 - 0.01 * LN2)


def test_the_defaults_are_di_engines_a2c():
    cfg = A2CPolicy.default_config()
    learn, collect = cfg.learn, cfg.collect
    assert (learn.batch_size, learn.learning_rate, learn.betas, learn.eps) == (64, 1e-3, [0.9, 0.999], 1e-8)
    assert (learn.value_weight, learn.entropy_weight, learn.adv_norm, learn.grad_clip_norm) == (0.5, 0.01, False, 0.5)
    assert (collect.discount_factor, collect.gae_lambda, learn.epoch_per_collect) == (0.9, 0.95, 1)


def test_adv_norm_centres_each_minibatchs_advantages():
    # [2, -1] normalized is [1, -1] / sqrt(2): against a constant log pi the policy term is 0
    info = uniform_a2c(adv_norm=True).learn_mode.forward(batch())
    assert float(info['policy_loss']) == pytest.approx(0.0, abs=1e-6)
    assert float(info['value_loss']) == pytest.approx(2.5)  # the value target is R = A + V, never normalized


def test_the_rollout_carries_gae_advantages_truncation_bootstrapping_and_termination_not():
    torch.manual_seed(0)
    policy = make_a2c()
    sample, r, next_obs = two_env_rollout(policy)  # env 0 truncated at step 1, env 1 terminated there
    v, advantage = sample['value'].reshape(3, 2), sample['advantage'].reshape(3, 2)
    with torch.no_grad():
        final = policy.model.value(next_obs[1])  # V of env 0's final obs
    assert torch.allclose(advantage[1, 0], r[1, 0] + GAMMA * final[0] - v[1, 0], atol=1e-6)
    assert torch.allclose(advantage[1, 1], r[1, 1] - v[1, 1], atol=1e-6)
    assert torch.allclose(advantage[0, 1], r[0, 1] + GAMMA * v[1, 1] - v[0, 1] + GAMMA * LAM * advantage[1, 1],
                          atol=1e-6)
    assert torch.allclose(sample['return'], sample['advantage'] + sample['value'], atol=1e-6)


def test_gae_lambda_one_gives_the_discounted_return_bootstrapped_where_the_episode_is_cut_off():
    torch.manual_seed(0)
    policy = make_a2c(collect=dict(gae_lambda=1.0))
    sample, r, next_obs = two_env_rollout(policy)
    returns = sample['return'].reshape(3, 2)
    with torch.no_grad():
        final, last = policy.model.value(next_obs[1]), policy.model.value(next_obs[2])
    assert torch.allclose(returns[0, 0], r[0, 0] + GAMMA * r[1, 0] + GAMMA ** 2 * final[0], atol=1e-5)  # truncated
    assert torch.allclose(returns[0, 1], r[0, 1] + GAMMA * r[1, 1], atol=1e-5)  # terminated
    assert torch.allclose(returns[2], r[2] + GAMMA * last, atol=1e-5)  # the rollout's end


def test_a2c_passes_once_over_each_rollout():
    assert load_config('cartpole_a2c').policy.learn.epoch_per_collect == 1
    with pytest.raises(ConfigError, match=r"^config key 'policy\.learn\.epoch_per_collect' must be in \{1\}, got 2$"):
        load_config('cartpole_a2c', overrides=['policy.learn.epoch_per_collect=2'])


def test_continuous_actions_update_a_gaussian_policy():
    torch.manual_seed(0)
    policy = make_a2c(action_space='continuous', action_shape=2)
    rows, _ = random_rollout(policy)
    info = policy.learn_mode.forward(rows)
    assert all(torch.isfinite(info[name]) for name in policy.learn_mode.monitor_vars())
    with torch.no_grad():  # the policy term is taken on the joint log-density of both action dimensions
        dist = policy.model.policy(rows['obs'])
    assert dist.log_prob(rows['action']).shape == (rows['action'].shape[0], )


def test_the_learn_state_round_trips_with_the_optimizer_moments(tmp_path):
    torch.manual_seed(0)
    policy = make_a2c()
    rows, _ = random_rollout(policy)
    policy.learn_mode.forward(rows)
    torch.save(policy.learn_mode.state_dict(), tmp_path / 'learn.pt')
    copy = make_a2c()
    copy.learn_mode.load_state_dict(torch.load(tmp_path / 'learn.pt', weights_only=True))
    for each in (policy, copy):  # the second update reads Adam's moments of the first
        each.learn_mode.forward(rows)
    for mine, theirs in zip(copy.model.parameters(), policy.model.parameters()):
        assert torch.equal(mine, theirs)


def test_the_exported_actor_acts_as_the_eval_mode():
    torch.manual_seed(0)
    policy = make_a2c(action_shape=3)
    obs = torch.randn(16, 3) * 5
    assert torch.equal(policy.export_actor()(obs), policy.eval_mode.forward(obs)['action'])


def test_the_zoo_config_trains_end_to_end_with_two_updates_per_rollout(tmp_path):
    result = train('cartpole_a2c', seed=0, max_env_step=320, progress=False,
                   overrides=['env.evaluator_env_num=1', 'env.n_evaluator_episode=1', 'policy.learn.learner.log_freq=4',
                              f'exp_name={tmp_path / "run"}'])
    summary = json.loads((result.run_dir / 'summary.json').read_text())
    assert (summary['env_step'], summary['train_iter']) == (320, 8)  # 4 rollouts of 80, 2 minibatches of 40 each
    log = (result.run_dir / 'log.txt').read_text()
    assert all(f'{name}=' in log for name in ('policy_loss', 'value_loss', 'entropy', 'grad_norm'))
