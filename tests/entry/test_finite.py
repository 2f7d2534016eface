"""Finite or stop: a diverging run stops at the first NaN, names it, and keeps its last good checkpoint."""
from __future__ import annotations

import pytest
import torch

from tidal import serial_pipeline
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.finite import FiniteGuard, NonFiniteError, first_non_finite_parameter

SHORT = ['policy.random_collect_size=50', 'policy.learn.batch_size=16', 'env.n_evaluator_episode=1',
         'policy.model.actor_hidden_sizes=[16]', 'policy.model.critic_hidden_sizes=[16]',
         'policy.learn.learner.log_freq=20', 'policy.learn.learner.save_ckpt_freq=20', 'env.stop_value=null']


def test_guard_names_the_first_non_finite_key_and_iteration():
    guard = FiniteGuard(torch.device('cpu'))
    values = [(1.0, 2.0), (1.0, float('inf')), (float('nan'), float('nan'))]
    for loss, q in values:
        guard.observe({'loss': torch.tensor(loss), 'q': torch.tensor(q), 'ignored': torch.tensor(float('nan'))},
                      ['loss', 'q'])
    assert guard.first_failure(start_iter=100) == ('q', float('inf'), 102)


def test_guard_stays_quiet_on_finite_values():
    guard = FiniteGuard(torch.device('cpu'))
    for _ in range(5):
        guard.observe({'loss': torch.tensor(0.5)}, ['loss', 'absent'])
    assert guard.first_failure() is None


def test_first_non_finite_parameter_is_named():
    layer = torch.nn.Linear(2, 2)
    assert first_non_finite_parameter(layer.named_parameters()) is None
    with torch.no_grad():
        layer.bias[1] = float('nan')
    assert first_non_finite_parameter(layer.named_parameters()) == 'bias'


def test_diverging_run_stops_with_the_key_and_iteration_and_keeps_a_finite_checkpoint(tmp_path):
    run = tmp_path / 'nan'
    with pytest.raises(NonFiniteError) as caught:
        serial_pipeline('pendulum_sac', seed=0, max_env_step=600, progress=False,
                        overrides=[*SHORT, 'policy.learn.learning_rate_q=1e12', f'exp_name={run}'])
    # the NaN weights then choose NaN actions, but the error names the first cause: the critic's update
    assert str(caught.value) == (f"critic_loss became inf at train iteration 2 (env step 52 when seen); "
                                 f"the last good checkpoint is {run / 'ckpt' / 'latest.pt'} (train iteration 0)")
    state = load_checkpoint(run / 'ckpt' / 'latest.pt')
    assert all(torch.isfinite(value).all() for value in state['policy']['model'].values())
