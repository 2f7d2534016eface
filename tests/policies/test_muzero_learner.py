"""The representation learner's unrolled targets from a trajectory buffer, reanalyze and its update."""
import copy

import pytest
import torch
from easydict import EasyDict

from tidal.base.defaults import class_defaults
from tidal.models.muzero import MuZeroModel
from tidal.policies.muzero_learner import (PRIORITY_EPS, RepresentationLearner, RepresentationOptions, search_config,
                                           unroll)
from tidal.worker.trajectory_buffer import TrajectoryBuffer

GAMMA = 0.9
STORED_POLICY = [1.0, 0.0]


def make_learner(discount: float = GAMMA, **repr_options) -> RepresentationLearner:
    torch.manual_seed(0)
    cfg = EasyDict(class_defaults(RepresentationOptions))
    cfg.repr.update({'num_unroll_steps': 2, 'td_steps': 2, **repr_options})
    cfg.search.num_simulations = 8
    model = MuZeroModel(3, 2, latent_size=8, hidden_sizes=(16, ), value_support_size=5, reward_support_size=5)
    return RepresentationLearner(model, cfg.repr, search_config(cfg.search, discount), torch.device('cpu'), seed=0)


def six_step_buffer() -> TrajectoryBuffer:
    """One env: an episode terminated at row 2, one truncated at row 4 (V(final obs) = 7), one running at row 5.
    Row t has reward t + 1 and stored value 10 (t + 1)."""
    buffer = TrajectoryBuffer(1, 16, seed=0)
    terminated = [False, False, True, False, False, False]
    truncated = [False, False, False, False, True, False]
    actions = [0, 1, 0, 1, 1, 0]
    for t in range(6):
        buffer.extend({
            'obs': torch.full((1, 3), float(t)), 'action': torch.tensor([actions[t]]),
            'reward': torch.tensor([t + 1.0]), 'terminated': torch.tensor([terminated[t]]),
            'truncated': torch.tensor([truncated[t]]), 'value': torch.tensor([10.0 * (t + 1)]),
            'policy': torch.tensor([STORED_POLICY]), 'bootstrap_value': torch.tensor([7.0 if truncated[t] else 0.0]),
        })
    return buffer


def batch_at(learner: RepresentationLearner, positions: list[int]) -> dict:
    return learner.make_batch(six_step_buffer(), torch.zeros(len(positions), dtype=torch.long),
                              torch.tensor(positions))


def test_n_step_targets_up_to_a_termination_then_absorbing_zero():
    batch = batch_at(make_learner(), [1])
    # state 0 = row 1: r1 + g r2 + g^2 * 0 (terminal); state 1 = row 2: r2 + g * 0; state 2: terminal
    torch.testing.assert_close(batch['target_value'], torch.tensor([[2 + GAMMA * 3, 3.0, 0.0]]))
    torch.testing.assert_close(batch['target_reward'], torch.tensor([[0.0, 2.0, 3.0]]))
    assert batch['game_over'].tolist() == [[False, False, True]]
    assert batch['beyond_episode_end'].tolist() == [[False, False, True]]
    assert batch['action'].tolist() == [[1, 0]]
    torch.testing.assert_close(batch['obs'], torch.full((1, 3), 1.0))


def test_a_truncated_episode_bootstraps_from_the_final_observation_value():
    batch = batch_at(make_learner(), [3])
    expected = [4 + GAMMA * 5 + GAMMA**2 * 7, 5 + GAMMA * 7, 7.0]
    torch.testing.assert_close(batch['target_value'], torch.tensor([expected]))
    torch.testing.assert_close(batch['target_reward'], torch.tensor([[0.0, 4.0, 5.0]]))
    assert batch['game_over'].tolist() == [[False, False, False]]


def test_at_the_replay_end_a_running_episode_bootstraps_from_its_newest_stored_value():
    learner = make_learner()
    batch = batch_at(learner, [4 - 4 + 5])  # row 5, the newest step, its episode still running
    torch.testing.assert_close(batch['target_value'], torch.tensor([[60.0, 60.0, 60.0]]))
    torch.testing.assert_close(batch['target_reward'], torch.zeros(1, 3))
    assert batch['beyond_episode_end'].tolist() == [[False, True, True]]
    assert batch['action'].tolist() == [[0, 0]]  # past the end the last action repeats


def test_beyond_the_end_actions_can_be_random():
    learner = make_learner(random_action_after_episode_end=True)
    actions = torch.cat([batch_at(learner, [5])['action'][:, 1] for _ in range(40)])
    assert set(actions.tolist()) == {0, 1}


def last_reward_buffer(terminated: bool) -> TrajectoryBuffer:
    """One env: rewards 0, 0, 5, then the episode terminates (or is truncated, V(final obs) = 7) at row 2;
    row 3 starts the next episode with reward 100, which no target of the first may read."""
    buffer = TrajectoryBuffer(1, 8, seed=0)
    for t, reward in enumerate([0.0, 0.0, 5.0, 100.0]):
        end = t == 2
        buffer.extend({
            'obs': torch.full((1, 3), float(t)), 'action': torch.tensor([0]), 'reward': torch.tensor([reward]),
            'terminated': torch.tensor([end and terminated]), 'truncated': torch.tensor([end and not terminated]),
            'value': torch.tensor([0.0]), 'policy': torch.tensor([STORED_POLICY]),
            'bootstrap_value': torch.tensor([7.0 if end and not terminated else 0.0]),
        })
    return buffer


@pytest.mark.parametrize('reanalyze_ratio', [0.0, 1.0])
@pytest.mark.parametrize('train_reward_function, at_and_after_the_end', [(True, 0.0), (False, 5.0)])
def test_without_a_reward_function_value_targets_at_and_after_game_over_are_the_last_reward(
        train_reward_function, at_and_after_the_end, reanalyze_ratio):
    learner = make_learner(discount=1.0, train_reward_function=train_reward_function, reanalyze_ratio=reanalyze_ratio)
    batch = learner.make_batch(last_reward_buffer(terminated=True), torch.zeros(2, dtype=torch.long),
                               torch.tensor([1, 2]))
    # from row 1: 0 + 5, then 5, then the terminal state; from row 2: 5, the terminal state, one step past it
    end = at_and_after_the_end
    torch.testing.assert_close(batch['target_value'], torch.tensor([[5.0, 5.0, end], [5.0, end, end]]))


def test_without_a_reward_function_a_truncated_episode_still_bootstraps_from_its_final_observation():
    learner = make_learner(discount=1.0, train_reward_function=False)
    batch = learner.make_batch(last_reward_buffer(terminated=False), torch.zeros(2, dtype=torch.long),
                               torch.tensor([1, 2]))
    # 0 + 5 + V(final obs) = 12, 5 + 7, then the final observation's 7, kept past it
    torch.testing.assert_close(batch['target_value'], torch.tensor([[12.0, 12.0, 7.0], [12.0, 7.0, 7.0]]))


def test_monte_carlo_targets_sum_rewards_to_the_episode_end():
    batch = batch_at(make_learner(td_steps=-1), [0])
    expected = [1 + GAMMA * 2 + GAMMA**2 * 3, 2 + GAMMA * 3, 3.0]
    torch.testing.assert_close(batch['target_value'], torch.tensor([expected]))


def test_stored_policies_are_the_policy_targets():
    batch = batch_at(make_learner(), [0, 3])
    torch.testing.assert_close(batch['target_policy'], torch.tensor(STORED_POLICY).expand(2, 3, 2))


@pytest.mark.parametrize('ratio, expected', [(0.0, 0), (0.3, 3), (0.5, 5), (1.0, 10)])
def test_reanalyze_replaces_exactly_its_share_of_the_batch(ratio, expected, monkeypatch):
    learner = make_learner(reanalyze_ratio=ratio)
    searched = []
    original = learner._search_rows

    def spy(buffer, env_ids, rows):
        searched.append(env_ids.shape[0])
        return original(buffer, env_ids, rows)

    monkeypatch.setattr(learner, '_search_rows', spy)
    batch = batch_at(learner, [0, 1, 3, 0, 1, 3, 0, 1, 3, 4])
    assert sum(searched) == expected
    # the reanalyzed samples' policy targets are fresh visit distributions, the others stay as stored
    stored = (batch['target_policy'][:, 0] == torch.tensor(STORED_POLICY)).all(dim=1)
    assert int((~stored).sum()) == expected


def test_reanalyze_searches_in_chunks_of_reanalyze_batch_size(monkeypatch):
    learner = make_learner(reanalyze_ratio=1.0, reanalyze_batch_size=4)
    sizes = []
    original = learner._search_rows
    monkeypatch.setattr(learner, '_search_rows', lambda b, e, r: sizes.append(e.shape[0]) or original(b, e, r))
    batch_at(learner, [0, 1, 3, 0, 1, 3, 0, 1, 3, 4])
    assert sizes == [4, 4, 2]


def test_recurrent_gradient_scaling_halves_the_gradient_reaching_h_through_each_step():
    learner = make_learner()
    obs, action = torch.randn(4, 3), torch.randint(2, (4, 2))

    def representation_grad(scale: float) -> torch.Tensor:
        learner.model.zero_grad()
        outputs = unroll(learner.model, obs, action, scale)
        outputs[2].policy_logits.pow(2).sum().backward()  # step 2 reads h only through the scaled latent s1
        return torch.cat([p.grad.flatten() for p in learner.model.representation.parameters()])

    full, half = representation_grad(1.0), representation_grad(0.5)
    assert full.abs().sum() > 0
    torch.testing.assert_close(half, 0.5 * full)


def test_an_update_returns_its_losses_and_a_value_error_priority_per_sample():
    learner = make_learner()
    batch = batch_at(learner, [0, 1, 3, 5])
    before = [p.detach().clone() for p in learner.model.parameters()]
    info = learner.train(batch)
    assert info['priority'].shape == (4, ) and bool((info['priority'] > 0).all())
    assert {'value_loss', 'reward_loss', 'policy_loss', 'game_over_loss', 'total_loss'} <= set(info)
    assert any(not torch.equal(a, b) for a, b in zip(before, learner.model.parameters()))


# the env values whose squashed values are 2.3 = 0.7 * 2 + 0.3 * 3 and 2.0: h(x) = sqrt(x + 1) - 1 + 0.001 x gives
# 3.290175 - 1 + 0.009825 = 2.3 and 2.992048 - 1 + 0.007952 = 2.0
PREDICTED_VALUE, VALUE_ONE_ATOM_BELOW = 9.825249886, 7.952349145


def test_priority_is_the_summed_value_error_zero_for_a_perfect_prediction():
    learner = make_learner()
    # every state's value distribution: 0.7 on atom 2 and 0.3 on atom 3 of -5..5 (mean 2.3 = h(9.8252))
    probs = torch.full((11, ), 1e-9)
    probs[5 + 2], probs[5 + 3] = 0.7, 0.3
    with torch.no_grad():
        learner.model.value_head.weight.zero_()
        learner.model.value_head.bias.copy_(probs.log())
    # sample 0 is predicted exactly; sample 1's targets sit on atom 2, 1.87 lower. The two-hot target of 2.3 has
    # entropy 0.61 and that of 2.0 none, so the value cross-entropy ranked sample 1 (0.36 a step) below sample 0
    target = torch.tensor([[PREDICTED_VALUE] * 3, [VALUE_ONE_ATOM_BELOW] * 3])
    no = torch.zeros(2, 3, dtype=torch.bool)
    batch = {'obs': torch.zeros(2, 3), 'action': torch.zeros(2, 2, dtype=torch.long), 'target_value': target,
             'target_reward': torch.zeros(2, 3), 'target_policy': torch.full((2, 3, 2), 0.5), 'game_over': no,
             'beyond_episode_end': no}
    priority = learner.train(batch)['priority']
    assert priority[1] > priority[0]
    assert priority[0].item() == pytest.approx(PRIORITY_EPS, abs=1e-4)
    assert priority[1].item() == pytest.approx(3 * (PREDICTED_VALUE - VALUE_ONE_ATOM_BELOW) + PRIORITY_EPS, abs=1e-4)


@pytest.mark.parametrize('train_game_over_function', [True, False])
def test_the_search_stops_at_predicted_game_over_only_where_the_model_learns_it(train_game_over_function):
    learner = make_learner(train_game_over_function=train_game_over_function)
    assert learner.search_cfg.stop_at_predicted_game_over is train_game_over_function


def test_the_target_model_follows_every_target_update_period_updates():
    learner = make_learner(target_update_period=2)
    batch = batch_at(learner, [0, 1])
    learner.train(batch)
    assert not torch.equal(learner.target.net.value_head.weight, learner.model.value_head.weight)
    learner.train(batch)
    assert torch.equal(learner.target.net.value_head.weight, learner.model.value_head.weight)


def test_state_dict_round_trip_reproduces_the_next_update():
    learner = make_learner(reanalyze_ratio=0.5)
    learner.train(batch_at(learner, [0, 1, 3, 5]))
    state = copy.deepcopy(learner.state_dict())  # a checkpoint, not views of the live tensors
    batch = batch_at(learner, [0, 1, 3, 5])
    first = learner.train(batch)['total_loss']
    other = make_learner(reanalyze_ratio=0.5)
    other.load_state_dict(state)
    assert torch.equal(other.train(batch)['total_loss'], first)
