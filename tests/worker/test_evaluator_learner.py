from types import SimpleNamespace

import pytest
import torch
from easydict import EasyDict

from tidal.envs import make_env_manager
from tidal.base.errors import CheckpointError, PolicyError
from tidal.worker.checkpoint import load_checkpoint, save_checkpoint
from tidal.worker.evaluator import Evaluator
from tidal.worker.learner import Learner, scalars


def zero_policy():
    return SimpleNamespace(forward=lambda obs: {'action': torch.zeros(obs.shape[0], dtype=torch.long)},
                           reset=lambda env_ids: None, seed=lambda seed: None)


def test_evaluator_runs_exactly_n_episodes_split_over_envs(counter_env):
    env = make_env_manager(counter_env(terminate_at=4).make, 'base', 2)
    evaluator = Evaluator(env, zero_policy(), torch.device('cpu'), n_episode=3, eval_freq=10, seed=0)
    result = evaluator.eval(train_iter=0)
    assert len(result.returns) == 3
    assert result.return_mean == pytest.approx(1 + 2 + 3 + 4)
    assert result.length_mean == 4


def test_evaluator_schedule_and_stop_value(counter_env):
    env = make_env_manager(counter_env(terminate_at=1).make, 'base', 1)
    evaluator = Evaluator(env, zero_policy(), torch.device('cpu'), n_episode=1, eval_freq=10, stop_value=1.0)
    assert evaluator.should_eval(0)
    result = evaluator.eval(train_iter=0)
    assert not evaluator.should_eval(9) and evaluator.should_eval(10)
    assert evaluator.reached_stop_value(result)


def test_learner_runs_hooks_on_schedule():
    calls = []
    learner = Learner(SimpleNamespace(forward=lambda batch: {'loss': torch.tensor(batch)},
                                      monitor_vars=lambda: ['loss']))
    learner.register_hook(lambda lrn, info: calls.append((lrn.train_iter, float(info['loss']))), every=2)
    for value in range(5):
        learner.train(float(value))
    assert calls == [(2, 1.0), (4, 3.0)]
    assert learner.first_failure() is None
    learner.train(float('nan'))
    assert learner.first_failure()[::2] == ('loss', 6)
    with pytest.raises(ValueError, match='>= 1'):
        learner.register_hook(lambda lrn, info: None, every=0)


def learn_mode(values, monitored, policy_type='my_dqn'):
    return SimpleNamespace(forward=lambda batch: dict(values), monitor_vars=lambda: list(monitored),
                           cfg=EasyDict(type=policy_type))


def test_every_scalar_the_first_update_returns_is_logged_listed_ones_first():
    values = {'q_value': torch.tensor(2.0), 'q_loss': torch.tensor(0.5), 'lr': 3e-4, 'priority': torch.ones(4),
              'kl': torch.tensor([0.1])}
    logged = []
    learner = Learner(learn_mode(values, ['q_loss']))
    learner.register_hook(lambda lrn, info: logged.append(scalars(info, lrn.logged_names)), every=1)
    learner.train({})
    assert learner.logged_names == ['q_loss', 'q_value', 'lr']  # not the per-sample priority, nor a [1] tensor
    assert logged == [{'q_loss': 0.5, 'q_value': 2.0, 'lr': 3e-4}]


def test_a_listed_name_the_first_update_does_not_return_is_an_error_naming_the_policy():
    learner = Learner(learn_mode({'q_loss': torch.tensor(0.5), 'q_value': torch.tensor(1.0)},
                                 ['q_loss', 'q_valu', 'td_error']))
    with pytest.raises(PolicyError) as err:
        learner.train({})
    assert str(err.value) == ("policy 'my_dqn': _monitor_vars_learn lists 'q_valu', 'td_error', which its first update "
                              "did not return (it returned 'q_loss', 'q_value')")
    assert learner.train_iter == 0


def test_a_phase_logs_its_scalars_too_and_must_return_what_it_lists():
    learner = Learner(learn_mode({'loss': torch.tensor(1.0)}, ['loss'], 'ppg'))
    learner.train({})
    aux = learn_mode({'aux_loss': torch.tensor(2.0), 'aux_kl': torch.tensor(0.1)}, ['aux_loss'], 'ppg')
    learner.train_phase('aux', aux, {})
    assert learner.logged_names == ['loss', 'aux_loss', 'aux_kl']
    with pytest.raises(PolicyError) as err:
        learner.train_phase('other', learn_mode({}, ['aux_value'], 'ppg'), {})
    assert str(err.value) == ("policy 'ppg': the monitor_vars of its 'other' phase lists 'aux_value', which its first "
                              "update did not return (it returned nothing)")


def test_scalars_converts_only_named_entries():
    info = {'loss': torch.tensor(0.5), 'priority': torch.ones(4), 'lr': 3e-4}
    assert scalars(info, ['loss', 'lr', 'missing']) == {'loss': 0.5, 'lr': 3e-4}


def test_checkpoint_is_written_atomically_and_round_trips(tmp_path):
    path = save_checkpoint({'model': {'w': torch.ones(2)}}, tmp_path / 'ckpt' / 'latest.pt')
    assert [p.name for p in path.parent.iterdir()] == ['latest.pt']  # no temporary file left behind
    assert torch.equal(load_checkpoint(path)['model']['w'], torch.ones(2))


def test_missing_or_corrupt_checkpoint_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match="checkpoint '.*nope.pt' not found"):
        load_checkpoint(tmp_path / 'nope.pt')
    (tmp_path / 'bad.pt').write_text('not a checkpoint')
    with pytest.raises(CheckpointError, match='cannot be read'):
        load_checkpoint(tmp_path / 'bad.pt')


def test_a_sampling_evaluation_repeats_with_its_seed_whatever_training_drew():
    from tidal.entry.setup import load_config
    from tidal.worker.builders import build_env_manager, build_policy
    cfg = load_config('cartpole_ppo', 0, ['policy.eval.deterministic=False', 'env.evaluator_env_num=2'])
    policy = build_policy(cfg, enable_field=('eval',))
    evaluator = Evaluator(build_env_manager(cfg, 'evaluator'), policy.eval_mode, policy.device, n_episode=4,
                          eval_freq=1, seed=3)
    first = evaluator.eval(train_iter=7)
    torch.manual_seed(123)  # training moves torch's global generator between two evaluations
    global_state = torch.get_rng_state()
    again = evaluator.eval(train_iter=7)
    assert torch.equal(torch.get_rng_state(), global_state)  # an evaluation draws nothing from it
    assert again.returns.tolist() == first.returns.tolist()
    evaluator.env.close()
