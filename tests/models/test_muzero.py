"""MuZero's network: shapes, latent scaling, the search contract, support decoding and the unroll loss."""
import inspect
import math

import pytest
import torch

from tidal.config.model_args import hint_rules
from tidal.mcts import SearchConfig, search
from tidal.models import MuZeroModel
from tidal.models.muzero import MuZeroLossError, MuZeroOutput, MuZeroTargets, ResidualBlock, min_max_scale
from tidal.registry import MODEL_REGISTRY
from tidal.rl_utils.value_transform import scale_value, to_support


SUPPORT = 2  # support sizes of the hand-made outputs: 5 atoms, -2..2


def assert_close(actual, expected):
    torch.testing.assert_close(actual, torch.tensor(expected, dtype=actual.dtype))


def small_model(obs_shape=4, **kwargs):
    torch.manual_seed(0)
    defaults = dict(latent_size=8, hidden_sizes=[16], conv_channels=[4], value_support_size=SUPPORT,
                    reward_support_size=SUPPORT)
    return MuZeroModel(obs_shape, 3, **{**defaults, **kwargs})


def unroll(model, obs, actions):
    """initial_inference on obs, then recurrent_inference with each column of actions [B, K]."""
    outputs = [model.initial_inference(obs)]
    for k in range(actions.shape[1]):
        outputs.append(model.recurrent_inference(outputs[-1].latent, actions[:, k]))
    return outputs


def hand_output(batch_size=2, num_actions=3, latent=None, reward=True, game_over=0.0):
    """An output with uniform (zero) logits everywhere: each cross-entropy is log(number of classes)."""
    atoms = 2 * SUPPORT + 1
    return MuZeroOutput(latent=torch.zeros(batch_size, 4) if latent is None else latent,
                        policy_logits=torch.zeros(batch_size, num_actions),
                        value_logits=torch.zeros(batch_size, atoms),
                        reward_logits=torch.zeros(batch_size, atoms) if reward else None,
                        game_over_logit=torch.full((batch_size,), game_over))


def hand_targets(batch_size=2, num_steps=3, num_actions=3, **overrides):
    fields = dict(value=torch.zeros(batch_size, num_steps), reward=torch.zeros(batch_size, num_steps),
                  policy=torch.full((batch_size, num_steps, num_actions), 1.0 / num_actions),
                  game_over=torch.zeros(batch_size, num_steps, dtype=torch.bool),
                  beyond_episode_end=torch.zeros(batch_size, num_steps, dtype=torch.bool))
    return MuZeroTargets(**{**fields, **overrides})


def hand_unroll(num_steps=3, **kwargs):
    return [hand_output(reward=False, **kwargs)] + [hand_output(**kwargs) for _ in range(num_steps - 1)]


@pytest.mark.parametrize('obs_shape, obs', [
    (4, torch.randn(5, 4)),
    ([10, 10, 4], torch.randint(0, 256, (5, 10, 10, 4), dtype=torch.uint8)),
])
def test_output_shapes_through_initial_and_three_recurrent_steps(obs_shape, obs):
    model = small_model(obs_shape, pixel_scale=1 / 255, num_res_blocks=2)
    outputs = unroll(model, obs, torch.randint(0, 3, (5, 3)))
    assert len(outputs) == 4 and outputs[0].reward_logits is None
    for output in outputs:
        assert output.latent.shape == (5, 8) and output.policy_logits.shape == (5, 3)
        assert output.value_logits.shape == (5, 2 * SUPPORT + 1) and output.game_over_logit.shape == (5,)
        assert model.value(output).shape == model.reward(output).shape == (5,)
    for output in outputs[1:]:
        assert output.reward_logits.shape == (5, 2 * SUPPORT + 1)
    assert model.reward(outputs[0]).tolist() == [0.0] * 5
    assert sum(isinstance(module, ResidualBlock) for module in model.modules()) == (2 if len(obs.shape) == 4 else 0)


def test_residual_block_with_zero_convolutions_passes_nonnegative_input_through():
    block = ResidualBlock(2)
    for param in block.parameters():
        torch.nn.init.zeros_(param)
    x = torch.rand(1, 2, 3, 3)
    assert torch.equal(block(x), x)
    assert torch.equal(block(-x), torch.zeros_like(x))  # the skip is added before the final ReLU


def test_without_game_over_head_the_logit_is_none():
    model = small_model(game_over_head=False)
    output = model.recurrent_inference(model.initial_inference(torch.randn(2, 4)).latent, torch.tensor([0, 2]))
    assert output.game_over_logit is None


@pytest.mark.parametrize('obs_shape, obs', [
    (4, torch.randn(6, 4) * 5),
    ([10, 10, 4], torch.randint(0, 256, (6, 10, 10, 4), dtype=torch.uint8)),
])
def test_every_latent_spans_exactly_zero_to_one_per_sample(obs_shape, obs):
    model = small_model(obs_shape, pixel_scale=1 / 255)
    for output in unroll(model, obs, torch.randint(0, 3, (6, 2))):
        assert output.latent.amin(dim=1).tolist() == [0.0] * 6
        assert output.latent.amax(dim=1).tolist() == pytest.approx([1.0] * 6)


def test_unscaled_model_gives_the_latents_that_scaling_maps_to_the_scaled_ones():
    scaled, unscaled = small_model(scale_latent=True), small_model(scale_latent=False)
    obs = torch.randn(3, 4)
    raw = unscaled.initial_inference(obs).latent
    assert raw.amin() < 0  # the raw linear output is not confined to [0, 1]
    torch.testing.assert_close(scaled.initial_inference(obs).latent, min_max_scale(raw))


def test_constant_latent_scales_to_zero_not_nan():
    latent = torch.tensor([[2.0, 2.0, 2.0], [1.0, 3.0, 2.0]])
    assert min_max_scale(latent).tolist() == [[0.0, 0.0, 0.0], [0.0, 1.0, 0.5]]


def test_recurrent_fn_drives_the_batched_search():
    model = small_model()
    root = model.initial_inference(torch.randn(4, 4))
    latent, reward, logits, value, game_over_logit = model.recurrent_fn(root.latent, torch.tensor([0, 1, 2, 0]))
    assert (latent.shape, reward.shape, logits.shape, value.shape) == ((4, 8), (4,), (4, 3), (4,))
    assert game_over_logit.shape == (4,)
    assert not latent.requires_grad and not value.requires_grad
    result = search(root.latent, root.policy_logits, model.value(root), model.recurrent_fn,
                    SearchConfig(num_simulations=8), generator=torch.Generator().manual_seed(0))
    assert result.visit_counts.shape == result.q_values.shape == (4, 3)
    assert result.root_value.shape == (4,)
    assert result.visit_counts.sum(dim=1).tolist() == [8.0] * 4


def test_untrained_model_predicts_zero_value_and_reward():
    model = small_model()
    output = model.recurrent_inference(model.initial_inference(torch.randn(2, 4)).latent, torch.tensor([1, 2]))
    assert model.value(output).tolist() == [0.0, 0.0] and model.reward(output).tolist() == [0.0, 0.0]


@pytest.mark.parametrize('number', [3.0, -0.5])
def test_value_and_reward_decode_forced_support_logits_to_env_units(number):
    model = small_model()
    two_hot_log = to_support(scale_value(torch.tensor(number)), SUPPORT).log()  # -inf off the two atoms
    with torch.no_grad():
        for head in (model.value_head, model.reward_head):
            head.weight.zero_()
            head.bias.copy_(two_hot_log)
    output = model.recurrent_inference(model.initial_inference(torch.randn(2, 4)).latent, torch.tensor([0, 1]))
    # float32 loses ~1e-4 in h^-1, which divides by 2 eps
    assert model.value(output).tolist() == pytest.approx([number] * 2, abs=1e-3)
    assert model.reward(output).tolist() == pytest.approx([number] * 2, abs=1e-3)


def test_uniform_logits_give_each_term_the_log_of_its_class_count():
    terms = hand_unroll(num_steps=3)
    losses = small_model().calc_loss(terms, hand_targets(game_over=torch.ones(2, 3, dtype=torch.bool)))
    atoms = 2 * SUPPORT + 1
    assert_close(losses['value'], [[math.log(atoms)] * 3] * 2)
    assert_close(losses['reward'], [[0.0, math.log(atoms), math.log(atoms)]] * 2)
    assert_close(losses['policy'], [[math.log(3)] * 3] * 2)
    assert_close(losses['game_over'], [[math.log(2)] * 3] * 2)
    assert 'latent' not in losses


def test_confident_correct_predictions_cost_nothing():
    # value 0 and reward 0 sit on the middle atom; action 1 is the policy target; the game is over
    peaked = torch.full((2, 2 * SUPPORT + 1), -50.0)
    peaked[:, SUPPORT] = 50.0
    policy_logits = torch.tensor([[-50.0, 50.0, -50.0]] * 2)
    output = MuZeroOutput(torch.zeros(2, 4), policy_logits, peaked, peaked, torch.full((2,), 50.0))
    targets = hand_targets(num_steps=2, policy=torch.tensor([[0.0, 1.0, 0.0]]).expand(2, 2, 3),
                           game_over=torch.ones(2, 2, dtype=torch.bool), latent=torch.zeros(2, 2, 4))
    losses = small_model().calc_loss([output, output], targets, train_repr_prediction=True)
    for name in ('value', 'reward', 'policy', 'game_over', 'latent', 'loss'):
        assert losses[name].abs().max() < 1e-6, name


def test_reward_term_ignores_step_zero_and_reads_the_target_of_each_unrolled_step():
    # the reward logits predict 0 with certainty; only step 0's target is wrong, and step 0 has no transition
    peaked = torch.full((2, 2 * SUPPORT + 1), -50.0)
    peaked[:, SUPPORT] = 50.0
    outputs = hand_unroll(num_steps=3)
    outputs[1] = MuZeroOutput(outputs[1].latent, outputs[1].policy_logits, outputs[1].value_logits, peaked,
                              outputs[1].game_over_logit)
    targets = hand_targets(num_steps=3, reward=torch.tensor([[100.0, 0.0, 0.0], [-100.0, 0.0, 0.0]]))
    losses = small_model().calc_loss(outputs, targets)
    assert_close(losses['reward'], [[0.0, 0.0, math.log(2 * SUPPORT + 1)]] * 2)


def test_policy_term_is_masked_beyond_the_episode_end_only():
    beyond = torch.tensor([[False, False, True], [False, True, True]])
    losses = small_model().calc_loss(hand_unroll(num_steps=3), hand_targets(beyond_episode_end=beyond))
    log3 = math.log(3)
    assert_close(losses['policy'], [[log3, log3, 0.0], [log3, 0.0, 0.0]])
    assert losses['value'].min() > 0  # the other terms still train there


def test_latent_term_is_the_mean_squared_error_to_the_target_latents():
    outputs = hand_unroll(num_steps=2, latent=torch.tensor([[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]]))
    target_latent = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 0.0, 0.0]],
                                  [[1.0, 1.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]])
    losses = small_model().calc_loss(outputs, hand_targets(num_steps=2, latent=target_latent),
                                     train_repr_prediction=True)
    assert losses['latent'].tolist() == [[0.0, 0.5], [0.0, 0.25]]


def test_disabled_terms_are_absent_and_not_in_the_loss():
    model, outputs, targets = small_model(), hand_unroll(num_steps=3), hand_targets()
    full = model.calc_loss(outputs, targets)
    value_only = model.calc_loss(outputs, targets, train_reward=False, train_policy=False, train_game_over=False)
    assert set(full) == {'value', 'reward', 'policy', 'game_over', 'loss'}
    assert set(value_only) == {'value', 'loss'}
    # value log(5) at each of 3 steps, steps 1..2 weighted 1/2
    assert value_only['loss'].item() == pytest.approx(2 * math.log(5))
    assert full['loss'].item() == pytest.approx(2 * (math.log(5) + math.log(3) + math.log(2)) + math.log(5))


@pytest.mark.parametrize('num_unroll_steps', [1, 2, 4])
def test_unrolled_steps_are_weighted_one_over_k(num_unroll_steps):
    # policy only, log 3 per step: step 0 counts once, the K unrolled steps together count once
    outputs, targets = hand_unroll(num_unroll_steps + 1), hand_targets(num_steps=num_unroll_steps + 1)
    losses = small_model().calc_loss(outputs, targets, train_value=False, train_reward=False,
                                     train_game_over=False)
    assert losses['loss'].item() == pytest.approx(2 * math.log(3))
    # masking the last step removes exactly its 1/K share
    beyond = torch.zeros(2, num_unroll_steps + 1, dtype=torch.bool)
    beyond[:, -1] = True
    losses = small_model().calc_loss(outputs, hand_targets(num_steps=num_unroll_steps + 1, beyond_episode_end=beyond),
                                     train_value=False, train_reward=False, train_game_over=False)
    assert losses['loss'].item() == pytest.approx((2 - 1 / num_unroll_steps) * math.log(3))


def test_loss_is_averaged_over_the_batch():
    outputs = hand_unroll(num_steps=1, batch_size=2)
    beyond = torch.tensor([[False], [True]])  # the second sample's only policy term is masked
    losses = small_model().calc_loss(outputs, hand_targets(num_steps=1, beyond_episode_end=beyond),
                                     train_value=False, train_reward=False, train_game_over=False)
    assert losses['loss'].item() == pytest.approx(math.log(3) / 2)


def test_loss_gradients_reach_every_parameter_of_h_g_and_f():
    model = small_model([6, 6, 2], num_res_blocks=1)
    obs = torch.rand(4, 6, 6, 2)
    outputs = unroll(model, obs, torch.randint(0, 3, (4, 2)))
    targets = MuZeroTargets(value=torch.randn(4, 3) * 3, reward=torch.randn(4, 3),
                            policy=torch.rand(4, 3, 3).softmax(-1), game_over=torch.rand(4, 3) < 0.5,
                            beyond_episode_end=torch.zeros(4, 3, dtype=torch.bool), latent=torch.rand(4, 3, 8))
    model.calc_loss(outputs, targets, train_repr_prediction=True)['loss'].backward()
    for name, param in model.named_parameters():
        assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_missing_heads_or_targets_are_reported():
    outputs = hand_unroll(num_steps=2)
    with pytest.raises(MuZeroLossError, match='game_over_head=True'):
        small_model(game_over_head=False).calc_loss(outputs, hand_targets(num_steps=2))
    with pytest.raises(MuZeroLossError, match='targets.latent'):
        small_model().calc_loss(outputs, hand_targets(num_steps=2), train_repr_prediction=True)
    with pytest.raises(MuZeroLossError, match='2 model outputs for targets of 3 steps'):
        small_model().calc_loss(outputs, hand_targets(num_steps=3))


def test_bad_observation_shape_is_rejected():
    with pytest.raises(ValueError, match=r'shape \[4, 4\]'):
        MuZeroModel([4, 4], 2)


def test_model_resolves_by_name_with_config_rules_for_every_argument():
    model = MODEL_REGISTRY.build('muzero', obs_shape=4, action_shape=2)
    assert isinstance(model, MuZeroModel)
    assert model.initial_inference(torch.randn(1, 4)).value_logits.shape == (1, 21)
    assert set(hint_rules(MuZeroModel)) == set(inspect.signature(MuZeroModel).parameters)
