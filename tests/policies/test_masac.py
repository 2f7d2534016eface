"""multi_agent=True on discrete_sac, sac and sqil_sac: per-agent losses and action masks."""
import math

import pytest
import torch

from tidal.base.errors import ConfigError
from tidal.models.maqac import ContinuousMAQAC, DiscreteMAQAC
from tidal.policies import DiscreteSACPolicy, SACPolicy, SACVPolicy, SQILSACPolicy
from tidal.registry import POLICY_REGISTRY

AGENTS, OBS, GLOBAL, ACTIONS = 3, 4, 7, 5


def make_policy(cls=DiscreteSACPolicy, action_shape=ACTIONS, **learn):
    cfg = cls.default_config()
    cfg.multi_agent = True
    cfg.model.update(agent_num=AGENTS, agent_obs_shape=OBS, global_obs_shape=GLOBAL, action_shape=action_shape,
                     actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.learn.update(learn)
    torch.manual_seed(0)
    return cls(cfg)


def ma_obs(batch: int, legal: torch.Tensor | None = None) -> dict:
    """Random states; `legal` [agents] is how many of the first actions each agent may take."""
    obs = {'agent_state': torch.randn(batch, AGENTS, OBS), 'global_state': torch.randn(batch, GLOBAL)}
    if legal is not None:
        obs['action_mask'] = (torch.arange(ACTIONS) < legal[:, None]).expand(batch, AGENTS, ACTIONS).clone()
    return obs


def ma_batch(batch: int, legal: torch.Tensor | None = None, reward: torch.Tensor | None = None) -> dict:
    obs, next_obs = ma_obs(batch, legal), ma_obs(batch, legal)
    return dict(obs=obs, next_obs=next_obs, action=torch.zeros(batch, AGENTS, dtype=torch.long),
                reward=torch.randn(batch, AGENTS) if reward is None else reward,
                terminated=torch.zeros(batch, dtype=torch.bool), truncated=torch.zeros(batch, dtype=torch.bool))


def test_multi_agent_flag_picks_the_multi_agent_model():
    assert isinstance(make_policy(DiscreteSACPolicy).model, DiscreteMAQAC)
    assert isinstance(make_policy(SACPolicy, action_shape=2).model, ContinuousMAQAC)
    assert isinstance(make_policy(SQILSACPolicy, action_shape=2).model, ContinuousMAQAC)
    assert DiscreteSACPolicy.default_model({'multi_agent': True}) == ('discrete_maqac', ['tidal.models.maqac'])
    assert SACPolicy.default_model({'multi_agent': True}) == ('continuous_maqac', ['tidal.models.maqac'])
    assert SACPolicy.default_model({'multi_agent': False})[0] == 'continuous_qac'


@pytest.mark.parametrize('name, cls, model', [('sac', SACPolicy, ContinuousMAQAC),
                                               ('sqil_sac', SQILSACPolicy, ContinuousMAQAC),
                                               ('discrete_sac', DiscreteSACPolicy, DiscreteMAQAC)])
def test_the_registry_builds_the_registered_class_itself_with_the_multi_agent_model(name, cls, model):
    cfg = make_policy(cls, action_shape=2).cfg
    policy = POLICY_REGISTRY.build(name, cfg)
    assert type(policy) is cls and isinstance(policy.model, model)


def test_sac_v_refuses_the_multi_agent_flag():
    with pytest.raises(ConfigError) as err:
        SACVPolicy.default_model({'multi_agent': True})
    assert str(err.value) == "policy 'sac_v' has no multi-agent form; config key 'policy.multi_agent' must be False"


def test_masked_actions_are_never_chosen_per_agent():
    policy = make_policy()
    legal = torch.tensor([1, 2, 5])
    obs = ma_obs(200, legal)
    for actions in (policy.collect_mode.forward(obs)['action'], policy.collect_mode.random_action(obs)['action'],
                    policy.eval_mode.forward(obs)['action']):
        assert actions.shape == (200, AGENTS)
        assert obs['action_mask'].gather(-1, actions[..., None]).all()
    assert (policy.collect_mode.forward(obs)['action'][:, 2] > 1).any()  # the free agent uses its other actions


def test_masked_actions_get_zero_probability():
    policy = make_policy()
    obs = ma_obs(4, torch.tensor([1, 2, 5]))
    _, prob, _ = policy._policy(obs)
    assert prob.shape == (4, AGENTS, ACTIONS)
    assert torch.all(prob[:, 0, 1:] == 0) and torch.all(prob[:, 1, 2:] == 0)
    assert torch.allclose(prob[:, 0, 0], torch.ones(4))


def test_target_entropy_is_098_log_legal_actions_per_agent():
    policy = make_policy()
    target = policy._target_entropy_of(ma_obs(2, torch.tensor([1, 2, 5])))
    expected = torch.tensor([0.0, 0.98 * math.log(2), 0.98 * math.log(5)]).expand(2, AGENTS)
    assert torch.allclose(target, expected)


def test_per_agent_critic_target_by_hand():
    """Uniform actor over the legal actions and critics that give c_a whatever the state: the soft target of
    agent i is r_i + gamma * (mean of c over its legal actions + alpha * log n_legal_i)."""
    policy = make_policy(auto_alpha=False, alpha=0.5, discount_factor=0.9, learning_rate_q=0.0)
    policy.model.actor_head.init_uniform(0.0)
    c = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0])
    for critic in (policy.model.critic, policy._target_critic.net):
        last = critic.q.net[-1]
        torch.nn.init.zeros_(last.weight)
        with torch.no_grad():
            last.bias.copy_(c.expand_as(last.bias))
    legal = torch.tensor([1, 2, 5])
    reward = torch.tensor([[1.0, 0.0, -1.0], [0.0, 0.0, 0.0]])
    batch = ma_batch(2, legal, reward)
    batch['terminated'] = torch.tensor([False, True])
    batch['action'] = torch.tensor([[0, 1, 4], [0, 0, 2]])
    info = policy.learn_mode.forward(batch)
    soft_next = torch.tensor([1.0, 1.5 + 0.5 * math.log(2), 3.0 + 0.5 * math.log(5)])
    target = torch.stack([reward[0] + 0.9 * soft_next, reward[1]])       # the second sample terminated
    q_taken = torch.tensor([[1.0, 2.0, 5.0], [1.0, 1.0, 3.0]])
    assert float(info['target_q_value']) == pytest.approx(soft_next.mean().item(), rel=1e-6)
    assert float(info['critic_loss']) == pytest.approx(((target - q_taken) ** 2).mean().item(), rel=1e-6)
    assert info['priority'].tolist() == pytest.approx((target - q_taken).abs().mean(dim=1).tolist(), rel=1e-6)


def test_team_reward_is_broadcast_to_every_agent():
    policy_team, policy_agents = make_policy(), make_policy()
    batch = ma_batch(6, torch.tensor([2, 3, 5]), reward=torch.arange(6.0))
    info_team = policy_team.learn_mode.forward(batch)
    info_agents = policy_agents.learn_mode.forward({**batch, 'reward': torch.arange(6.0)[:, None].expand(6, AGENTS)})
    for key in policy_team.learn_mode.monitor_vars():
        assert float(info_team[key]) == pytest.approx(float(info_agents[key]), rel=1e-6)


def test_discrete_masac_alpha_loss_uses_the_per_agent_targets():
    """Uniform actor: E[log pi_i] = -log n_i, so the loss is -log(alpha) * mean_i(-log n_i + 0.98 log n_i)."""
    policy = make_policy()
    policy.model.actor_head.init_uniform(0.0)
    info = policy.learn_mode.forward(ma_batch(4, torch.tensor([1, 2, 5])))
    expected = -math.log(0.2) * (-0.02 * (math.log(2) + math.log(5))) / 3
    assert float(info['alpha_loss']) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize('cls', [SACPolicy, SQILSACPolicy])
def test_continuous_masac_learns_per_agent(cls):
    policy = make_policy(cls, action_shape=2)
    obs = ma_obs(8)
    action = policy.collect_mode.forward(obs)['action']
    assert action.shape == (8, AGENTS, 2) and action.abs().max() <= 1
    assert policy.collect_mode.random_action(obs)['action'].shape == (8, AGENTS, 2)
    assert policy.eval_mode.forward(obs)['action'].shape == (8, AGENTS, 2)
    batch = {**ma_batch(8), 'action': action, 'expert': torch.arange(8) >= 4}
    info = policy.learn_mode.forward(batch)
    assert all(math.isfinite(float(info[key])) for key in policy.learn_mode.monitor_vars())
    assert info['priority'].shape == (8,)
    assert policy._target_entropy == -2.0  # -action_dim per agent


def test_continuous_masac_critic_loss_falls_on_a_fixed_batch():
    policy = make_policy(SACPolicy, action_shape=2, learning_rate_q=3e-3)
    batch = {**ma_batch(32), 'action': torch.rand(32, AGENTS, 2) * 2 - 1,
             'terminated': torch.ones(32, dtype=torch.bool)}
    first = float(policy.learn_mode.forward(batch)['critic_loss'])
    for _ in range(300):
        last = float(policy.learn_mode.forward(batch)['critic_loss'])
    assert last < 0.3 * first


# ----- epsilon-greedy collection (other.eps) under multi_agent -----------------------------------

def greedy_actor_policy(**eps) -> DiscreteSACPolicy:
    """An actor that puts all but e^-30 of its mass on action 0 for every agent, with other.eps set."""
    cfg = DiscreteSACPolicy.default_config()
    cfg.multi_agent = True
    cfg.model.update(agent_num=AGENTS, agent_obs_shape=OBS, global_obs_shape=GLOBAL, action_shape=ACTIONS,
                     actor_hidden_sizes=[16], critic_hidden_sizes=[16])
    cfg.other.eps.update(eps)
    policy = DiscreteSACPolicy(cfg)
    policy.model.actor_head.init_uniform(0.0)
    with torch.no_grad():
        policy.model.actor_head.logits.bias.copy_(torch.tensor([30.0, 0.0, 0.0, 0.0, 0.0]))
    return policy


def test_eps_one_takes_each_agents_allowed_actions_uniformly():
    torch.manual_seed(0)
    policy = greedy_actor_policy(type='exp', start=1.0, end=1.0)
    actions = policy.collect_mode.forward(ma_obs(3000, torch.tensor([1, 2, 5])))['action']
    counts = [torch.bincount(actions[:, agent], minlength=ACTIONS) for agent in range(AGENTS)]
    assert counts[0].tolist() == [3000, 0, 0, 0, 0]        # one allowed action
    assert counts[1][2:].sum() == 0 and abs(counts[1][1].item() / 3000 - 1 / 2) < 0.04
    assert (abs(counts[2] / 3000 - 1 / 5) < 0.03).all()   # 4 std of a binomial share


def test_epsilon_greedy_tosses_one_coin_per_env_and_agent():
    """epsilon 0.5 over 5 allowed actions: each (env, agent) leaves the actor's action 0 with probability
    0.5 * 4/5 = 0.4, independently, so rows mix explored and greedy agents."""
    torch.manual_seed(0)
    policy = greedy_actor_policy(type='linear', start=0.5, end=0.5)
    actions = policy.collect_mode.forward(ma_obs(2000, torch.tensor([5, 5, 5])))['action']
    explored = actions != 0
    assert abs(explored.float().mean().item() - 0.4) < 0.02
    per_row = explored.sum(dim=1)
    assert ((per_row > 0) & (per_row < AGENTS)).float().mean() > 0.6  # 1 - 0.4^3 - 0.6^3 = 0.72
