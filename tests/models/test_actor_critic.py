import inspect
import math

import pytest
import torch

from tidal.config.model_args import hint_rules
from tidal.models import ActorCritic, DisjointPolicyValueNetwork
from tidal.models.encoders import ConvEncoder, build_encoder
from tidal.registry import MODEL_REGISTRY

MODELS = (ActorCritic, DisjointPolicyValueNetwork)


def outputs(model, obs, action_mask=None):
    if isinstance(model, DisjointPolicyValueNetwork):
        dist, value, aux_value = model(obs, action_mask=action_mask)
        assert aux_value.shape == value.shape
        return dist, value
    return model(obs, action_mask)


@pytest.mark.parametrize('model_cls', MODELS)
@pytest.mark.parametrize('share_encoder', [False, True])
@pytest.mark.parametrize('obs_shape, action_space, obs', [
    (4, 'discrete', torch.randn(5, 4)),
    ([4], 'continuous', torch.randn(5, 4)),
    ([10, 8, 4], 'discrete', torch.randint(0, 256, (5, 10, 8, 4), dtype=torch.uint8)),
])
def test_output_shapes(model_cls, share_encoder, obs_shape, action_space, obs):
    model = model_cls(obs_shape, 3, action_space, share_encoder, encoder_hidden_sizes=[8], pixel_scale=1 / 255)
    dist, value = outputs(model, obs)
    action = dist.sample()
    assert action.shape == ((5,) if action_space == 'discrete' else (5, 3))
    assert dist.log_prob(action).shape == dist.entropy().shape == value.shape == (5,)
    assert model.policy(obs).sample().shape == action.shape
    assert model.value(obs).shape == (5,)
    assert (model.action_dim, model.action_space) == (3, action_space)


def test_masked_action_gets_probability_zero():
    model = ActorCritic(4, 3)
    mask = torch.tensor([[1, 0, 1], [0, 1, 1]], dtype=torch.bool)
    probs = model.policy(torch.randn(2, 4), mask).probs
    assert probs[0, 1].item() == 0.0 and probs[1, 0].item() == 0.0
    assert torch.allclose(probs.sum(-1), torch.ones(2))


def test_gaussian_std_does_not_depend_on_the_observation():
    model = ActorCritic(4, 2, 'continuous', log_std_init=-1.0)
    dist = model.policy(torch.randn(3, 4) * 10)
    assert torch.allclose(dist.base_dist.scale, torch.full((3, 2), math.exp(-1.0)))
    assert not torch.allclose(dist.mean[0], dist.mean[1])


def test_require_aux_false_skips_the_aux_head():
    model = DisjointPolicyValueNetwork(4, 2)
    calls = []
    model.aux_value_head.register_forward_hook(lambda *args: calls.append(1))
    _, _, aux_value = model(torch.randn(3, 4), require_aux=False)
    assert aux_value is None and calls == []
    model(torch.randn(3, 4), require_aux=True)
    assert calls == [1]


def grads(module):
    return [p.grad for p in module.parameters()]


def has_gradient(module):
    return any(g is not None and g.abs().sum() > 0 for g in grads(module))


def test_shared_ppg_value_loss_never_reaches_the_encoder():
    model = DisjointPolicyValueNetwork([6, 6, 2], 2, share_encoder=True, encoder_hidden_sizes=[8])
    obs = torch.rand(4, 6, 6, 2)
    _, value, _ = model(obs)
    value.pow(2).mean().backward()
    assert not has_gradient(model.encoder)
    assert has_gradient(model.value_head)
    model.zero_grad(set_to_none=True)
    model.aux_value(obs).pow(2).mean().backward()
    assert has_gradient(model.encoder) and has_gradient(model.aux_value_head)
    assert not has_gradient(model.value_head)


def test_shared_ppo_value_loss_trains_the_shared_encoder():
    model = ActorCritic(4, 2, share_encoder=True)
    model.value(torch.randn(3, 4)).pow(2).mean().backward()
    assert has_gradient(model.encoder)


def test_dual_ppg_value_loss_reaches_only_the_value_component():
    model = DisjointPolicyValueNetwork(4, 2, share_encoder=False)
    _, value, aux_value = model(torch.randn(3, 4))
    (value.pow(2).mean() + 0 * aux_value.sum()).backward()
    assert has_gradient(model.value_encoder) and has_gradient(model.value_head)
    for component in (model.encoder, model.policy_head, model.aux_value_head):
        assert not has_gradient(component)


@pytest.mark.parametrize('action_space', ['discrete', 'continuous'])
def test_orthogonal_init_gains(action_space):
    model = DisjointPolicyValueNetwork(6, 3, action_space)
    policy_out = model.policy_head.logits if action_space == 'discrete' else model.policy_head.mu
    w = policy_out.weight  # [3, 64]: orthonormal rows scaled by the gain
    assert torch.allclose(w @ w.T, 0.01 ** 2 * torch.eye(3), atol=1e-7)
    for head in (model.value_head, model.aux_value_head):
        assert torch.allclose(head.weight.norm(), torch.tensor(1.0), atol=1e-5)
    hidden = model.encoder.net[0].weight  # [64, 6]: orthonormal columns
    assert torch.allclose(hidden.T @ hidden, 2.0 * torch.eye(6), atol=1e-5)
    assert all(torch.count_nonzero(m.bias) == 0 for m in model.modules() if isinstance(m, torch.nn.Linear))


def test_conv_encoder_scales_and_casts_pixels():
    torch.manual_seed(0)
    uint8_encoder = ConvEncoder([5, 5, 3], [4], [3], [2], [6], 'relu', pixel_scale=1 / 255)
    float_encoder = ConvEncoder([5, 5, 3], [4], [3], [2], [6], 'relu', pixel_scale=1.0)
    float_encoder.load_state_dict(uint8_encoder.state_dict())
    pixels = torch.randint(0, 256, (2, 5, 5, 3), dtype=torch.uint8)
    assert uint8_encoder.out_dim == 6
    assert torch.allclose(uint8_encoder(pixels), float_encoder(pixels.float() / 255), atol=1e-6)


def test_bad_shapes_and_action_space_are_rejected():
    with pytest.raises(ValueError, match=r'shape \[4, 4\]'):
        build_encoder([4, 4], [8], 'tanh', [16], [3], [1], 1.0)
    with pytest.raises(ValueError, match="unknown action_space 'box'"):
        ActorCritic(4, 2, 'box')


@pytest.mark.parametrize('name, model_cls', [('actor_critic', ActorCritic),
                                             ('ppg_disjoint', DisjointPolicyValueNetwork)])
def test_models_resolve_by_name_with_config_rules_for_every_argument(name, model_cls):
    assert isinstance(MODEL_REGISTRY.build(name, obs_shape=4, action_shape=2), model_cls)
    assert set(hint_rules(model_cls)) == set(inspect.signature(model_cls).parameters)


@pytest.mark.parametrize('model_cls', MODELS)
def test_value_encoder_has_its_own_layout_on_separate_encoders(model_cls):
    model = model_cls(obs_shape=3, action_shape=2, encoder_hidden_sizes=[8], value_encoder_hidden_sizes=[16, 32])
    value_layers = [layer.out_features for layer in model.value_encoder.modules() if isinstance(layer, torch.nn.Linear)]
    policy_layers = [layer.out_features for layer in model.encoder.modules() if isinstance(layer, torch.nn.Linear)]
    assert (policy_layers, value_layers) == ([8], [16, 32])
    assert model.value_head.in_features == 32 and outputs(model, torch.randn(5, 3))[1].shape == (5,)


def test_value_encoder_layout_needs_separate_encoders():
    with pytest.raises(ValueError, match='value_encoder_hidden_sizes needs share_encoder=False'):
        ActorCritic(obs_shape=3, action_shape=2, share_encoder=True, value_encoder_hidden_sizes=[16])
