import pytest
import torch

from tidal.models.maqac import ContinuousMAQAC, DiscreteMAQAC


def ma_obs(batch=5, agents=3, obs_dim=4, global_dim=7):
    return {'agent_state': torch.randn(batch, agents, obs_dim), 'global_state': torch.randn(batch, global_dim)}


def test_discrete_maqac_gives_per_agent_logits_and_per_agent_q_over_actions():
    model = DiscreteMAQAC(agent_num=3, agent_obs_shape=4, global_obs_shape=[7], action_shape=5,
                          actor_hidden_sizes=[8], critic_hidden_sizes=[8])
    obs = ma_obs()
    assert model.actor(obs).shape == (5, 3, 5)
    assert model.critic(obs).shape == (2, 5, 3, 5)


def test_continuous_maqac_gives_per_agent_gaussians_and_one_q_per_agent():
    model = ContinuousMAQAC(agent_num=3, agent_obs_shape=4, global_obs_shape=7, action_shape=2, twin_critic=False,
                            actor_hidden_sizes=[8], critic_hidden_sizes=[8])
    obs = ma_obs()
    mu, log_std = model.actor(obs)
    assert mu.shape == log_std.shape == (5, 3, 2)
    assert model.critic(obs, torch.zeros(5, 3, 2)).shape == (1, 5, 3)


def test_actor_parameters_are_shared_and_the_agent_id_tells_agents_apart():
    """Identical agent states give identical actions without ids, different ones with them."""
    obs = {'agent_state': torch.ones(1, 3, 4), 'global_state': torch.zeros(1, 7)}
    torch.manual_seed(0)
    without = DiscreteMAQAC(3, 4, 7, 5, agent_id=False, actor_hidden_sizes=[8], critic_hidden_sizes=[8])
    logits = without.actor(obs)
    assert torch.equal(logits[0, 0], logits[0, 1]) and torch.equal(logits[0, 1], logits[0, 2])
    with_id = DiscreteMAQAC(3, 4, 7, 5, agent_id=True, actor_hidden_sizes=[8], critic_hidden_sizes=[8])
    logits = with_id.actor(obs)
    assert not torch.equal(logits[0, 0], logits[0, 1])


def test_critic_reads_only_the_global_state_and_the_agent_id():
    model = DiscreteMAQAC(3, 4, 7, 5, actor_hidden_sizes=[8], critic_hidden_sizes=[8])
    obs = ma_obs(batch=2)
    q = model.critic(obs)
    changed = {**obs, 'agent_state': torch.randn(2, 3, 4)}
    assert torch.equal(q, model.critic(changed))
    assert not torch.equal(q[:, :, 0], q[:, :, 1])  # one value per agent


@pytest.mark.parametrize('cls', [DiscreteMAQAC, ContinuousMAQAC])
def test_independent_critics_read_only_each_agents_own_state(cls):
    torch.manual_seed(0)
    model = cls(agent_num=3, agent_obs_shape=4, global_obs_shape=12, action_shape=2, global_critic=False)
    obs = {'agent_state': torch.randn(5, 3, 4), 'global_state': torch.randn(5, 12)}
    other_global = {**obs, 'global_state': torch.randn(5, 12)}
    other_agent = {**obs, 'agent_state': torch.randn(5, 3, 4)}

    def q(o):
        return model.critic(o) if cls is DiscreteMAQAC else model.critic(o, torch.zeros(5, 3, 2))
    assert torch.equal(q(obs), q(other_global))
    assert not torch.equal(q(obs), q(other_agent))
