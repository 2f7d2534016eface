import torch

from tidal.models import ContinuousQAC, ContinuousQVAC
from tidal.registry import MODEL_REGISTRY


def test_continuous_qvac_adds_a_state_value_to_the_qac():
    model = ContinuousQVAC(obs_shape=[3], action_shape=2, actor_hidden_sizes=[8], critic_hidden_sizes=[8],
                           value_hidden_sizes=[8, 8])
    obs = torch.randn(4, 3)
    assert isinstance(model, ContinuousQAC)
    assert model.value(obs).shape == (4,)
    assert model.critic(obs, torch.randn(4, 2)).shape == (2, 4)
    mu, log_std = model.actor(obs)
    assert mu.shape == log_std.shape == (4, 2)


def test_value_parameters_are_neither_actor_nor_critic_parameters():
    model = ContinuousQVAC(3, 2, actor_hidden_sizes=[8], critic_hidden_sizes=[8], value_hidden_sizes=[8])
    value = {id(p) for p in model.value.parameters()}
    others = {id(p) for p in [*model.actor_parameters(), *model.critic.parameters()]}
    assert value and not value & others
    assert len(list(model.parameters())) == len(value) + len(others)


def test_continuous_qvac_is_registered():
    assert MODEL_REGISTRY.get('continuous_qvac') is ContinuousQVAC
