import math

import pytest
import torch

from tidal.base.errors import ConfigError
from tidal.models import ContinuousQAC, DiscreteQAC, EnsembleLinear, TargetNetwork, Temperature
from tidal.models.mlp import mlp
from tidal.models.q_network import QNetwork
from tidal.registry import MODEL_REGISTRY


def test_ensemble_linear_equals_independent_linear_layers():
    torch.manual_seed(0)
    layer = EnsembleLinear(3, 2, ensemble_size=2)
    x = torch.randn(5, 3)
    out = layer(x)
    assert out.shape == (2, 5, 2)
    for member in range(2):
        expected = x @ layer.weight[member] + layer.bias[member]
        assert torch.allclose(out[member], expected, atol=1e-6)


@pytest.mark.parametrize('shared_input', [False, True])
def test_a_one_output_ensemble_layer_has_baddbmms_values_and_gradients_bit_for_bit(shared_input):
    torch.manual_seed(0)
    layer = EnsembleLinear(16, 1, ensemble_size=2)
    x = (torch.randn(300, 16) if shared_input else torch.randn(2, 300, 16)).requires_grad_()
    grad = torch.randn(2, 300, 1)
    y = layer(x)
    fast = torch.autograd.grad(y, (x, layer.weight, layer.bias), grad)
    per_member = x.unsqueeze(0).expand(2, -1, -1) if shared_input else x
    reference = torch.baddbmm(layer.bias, per_member, layer.weight)
    expected = torch.autograd.grad(reference, (x, layer.weight, layer.bias), grad)
    assert torch.equal(y, reference)
    assert all(torch.equal(a, b) for a, b in zip(fast, expected))


def test_a_one_output_ensemble_layer_differentiates_under_vmap_as_one_seed_at_a_time():
    torch.manual_seed(0)
    weight, bias, x = torch.randn(3, 2, 8, 1), torch.randn(3, 2, 1, 1), torch.randn(3, 2, 5, 8)
    layer = EnsembleLinear(8, 1, ensemble_size=2)

    def loss(w, b, inputs):
        return torch.func.functional_call(layer, {'weight': w, 'bias': b}, (inputs,)).pow(2).sum()

    grads = torch.func.vmap(torch.func.grad(loss, argnums=(0, 1)))(weight, bias, x)
    for seed in range(3):
        alone = torch.func.grad(loss, argnums=(0, 1))(weight[seed], bias[seed], x[seed])
        assert torch.allclose(grads[0][seed], alone[0]) and torch.allclose(grads[1][seed], alone[1])


def test_relu_after_a_linear_layer_runs_in_place_with_the_same_gradients():
    torch.manual_seed(0)
    net = mlp(4, [8, 8], 1)
    relus = [layer for layer in net if isinstance(layer, torch.nn.ReLU)]
    assert len(relus) == 2 and all(relu.inplace for relu in relus)
    x = torch.randn(10, 4)
    in_place = torch.autograd.grad(net(x).sum(), list(net.parameters()))
    for relu in relus:
        relu.inplace = False
    out_of_place = torch.autograd.grad(net(x).sum(), list(net.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(in_place, out_of_place))


def test_continuous_qac_shapes():
    model = ContinuousQAC(obs_shape=3, action_shape=[2], actor_hidden_sizes=[8], critic_hidden_sizes=[8, 8])
    mu, log_std = model.actor(torch.randn(4, 3))
    assert mu.shape == log_std.shape == (4, 2)
    assert model.critic(torch.randn(4, 3), torch.randn(4, 2)).shape == (2, 4)
    single = ContinuousQAC(3, 2, twin_critic=False)
    assert single.critic(torch.randn(4, 3), torch.randn(4, 2)).shape == (1, 4)


def test_discrete_qac_shapes():
    model = DiscreteQAC(obs_shape=4, action_shape=3)
    assert model.actor(torch.randn(5, 4)).shape == (5, 3)
    assert model.critic(torch.randn(5, 4)).shape == (2, 5, 3)


def test_models_are_registered():
    assert {'continuous_qac', 'discrete_qac'} <= set(MODEL_REGISTRY.names())


def test_target_network_polyak_update():
    online = torch.nn.Linear(2, 1)
    target = TargetNetwork(online)
    with torch.no_grad():
        online.weight.fill_(1.0)
        target.net.weight.fill_(0.0)
    target.update(0.25)
    assert torch.allclose(target.net.weight, torch.full((1, 2), 0.25))
    assert not any(p.requires_grad for p in target.parameters())
    target.update(1.0)  # tau = 1: an exact copy
    assert torch.equal(target.net.weight, online.weight)


def test_target_network_state_dict_holds_only_the_copy():
    target = TargetNetwork(torch.nn.Linear(2, 1))
    assert set(target.state_dict()) == {'net.weight', 'net.bias'}


def test_temperature_log_space_loss_gradient_sign():
    temperature = Temperature(0.2, auto=True, log_space=True)
    assert temperature.value.item() == pytest.approx(0.2)
    # entropy (-log_prob = 0.5) below the target (1.0): the loss must push alpha up
    loss = temperature.loss(torch.full((4,), -0.5), target_entropy=1.0)
    loss.backward()
    assert loss.item() == pytest.approx(-math.log(0.2) * 0.5)
    assert temperature.raw.grad.item() < 0  # gradient descent increases log alpha


def test_fixed_temperature_has_no_parameters():
    temperature = Temperature(0.1, auto=False)
    assert list(temperature.parameters()) == []
    assert temperature.value.item() == pytest.approx(0.1)


def test_fixed_temperature_of_zero_is_kept_as_it_is():
    for log_space in (True, False):
        temperature = Temperature(0.0, auto=False, log_space=log_space)
        assert temperature.value.item() == 0.0 and list(temperature.parameters()) == []


@pytest.mark.parametrize('alpha, auto, message', [
    (0.0, True, 'policy.learn.alpha must be > 0 when auto_alpha tunes it as log(alpha), got 0.0'),
    (-0.1, False, 'policy.learn.alpha must be a finite number >= 0, got -0.1'),
    (float('nan'), False, 'policy.learn.alpha must be a finite number >= 0, got nan'),
])
def test_temperature_out_of_range_is_a_config_error_naming_the_key(alpha, auto, message):
    with pytest.raises(ConfigError) as error:
        Temperature(alpha, auto=auto)
    assert str(error.value) == message


def test_temperature_loss_takes_one_target_per_sample():
    temperature = Temperature(0.5, auto=True)
    loss = temperature.loss(torch.tensor([-1.0, -0.2]), torch.tensor([0.7, 0.0]))
    assert loss.item() == pytest.approx(-math.log(0.5) * ((-1.0 + 0.7) + (-0.2 + 0.0)) / 2)


def test_direct_temperature_is_clamped_non_negative():
    temperature = Temperature(0.1, auto=True, log_space=False)
    with torch.no_grad():
        temperature.raw.fill_(-0.3)
    temperature.clamp_()
    assert temperature.value.item() == 0.0


def test_q_network_head_layer_num_counts_hidden_layers_in_each_branch():
    # encoder 4 -> 8: 40; each branch two hidden 8 -> 8 layers (72 each), then V 8 -> 1 (9) and A 8 -> 2 (18)
    model = QNetwork(4, 2, encoder_hidden_size_list=[8], dueling=True, head_layer_num=2)
    assert sum(p.numel() for p in model.parameters()) == 40 + 2 * 72 + 9 + 2 * 72 + 18
    # tidal's default, 0: the output layers on the encoder's features
    assert sum(p.numel() for p in QNetwork(4, 2, encoder_hidden_size_list=[8]).parameters()) == 40 + 9 + 18
    with pytest.raises(ValueError, match='head_layer_num must be >= 0, got -1'):
        QNetwork(4, 2, head_layer_num=-1)
