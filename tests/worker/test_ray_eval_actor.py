"""Evaluation on a Ray actor of its own (policy.eval.evaluator.on_ray): the rows a local run writes, off the
critical path, and the settings it refuses."""
import pytest
import torch

pytest.importorskip('ray')

from tidal import serial_pipeline_onpolicy  # noqa: E402
from tidal.base.errors import ConfigError  # noqa: E402
from tidal.entry.pipelines import train  # noqa: E402
from tidal.entry.setup import load_config  # noqa: E402
from tidal.worker.checkpoint import load_checkpoint  # noqa: E402

from whole_runs import eval_rows  # noqa: E402  (tests/worker is on sys.path)

pytestmark = pytest.mark.usefixtures('local_ray')  # tests/worker/conftest.py

RUN = ['env.collector_env_num=2', 'policy.collect.n_sample=64', 'policy.learn.batch_size=64',
       'policy.learn.epoch_per_collect=2', 'env.n_evaluator_episode=2', 'env.evaluator_env_num=2',
       'policy.eval.evaluator.eval_freq=4', 'env.stop_value=null']



def test_the_eval_actor_writes_the_rows_and_best_checkpoint_of_a_local_evaluator(tmp_path):
    local = serial_pipeline_onpolicy('cartpole_ppo', seed=1, max_env_step=640, progress=False,
                                     overrides=[*RUN, f'exp_name={tmp_path / "local"}'])
    remote = serial_pipeline_onpolicy('cartpole_ppo', seed=1, max_env_step=640, progress=False,
                                      overrides=[*RUN, 'policy.eval.evaluator.on_ray=true',
                                                 f'exp_name={tmp_path / "remote"}'])
    rows = eval_rows(tmp_path / 'remote')
    assert len(rows) == 6 and rows == eval_rows(tmp_path / 'local')  # iterations 0, 4, ..., 16 and the end
    for key, value in local.model.state_dict().items():
        assert torch.equal(value, remote.model.state_dict()[key]), key
    best = [load_checkpoint(tmp_path / name / 'ckpt' / 'best.pt') for name in ('local', 'remote')]
    assert best[0]['train_iter'] == best[1]['train_iter']
    for key, value in best[0]['policy']['model'].items():
        assert torch.equal(value, best[1]['policy']['model'][key]), key
    log = (tmp_path / 'remote' / 'log.txt').read_text()
    assert 'run ended: budget of 640 env steps reached' in log


def test_the_eval_actor_records_no_videos():
    with pytest.raises(ConfigError, match=r'policy\.eval\.evaluator\.on_ray: the eval actor records no videos'):
        load_config('cartpole_ppo', 0, ['policy.eval.evaluator.on_ray=true', 'policy.eval.evaluator.video_every=2'])


def test_a_seed_group_refuses_the_eval_actor(tmp_path):
    with pytest.raises(ConfigError, match=r'policy\.eval\.evaluator\.on_ray cannot serve a seed group'):
        train('cartpole_ppo', seeds=[0, 1], max_env_step=128, progress=False,
              overrides=[*RUN, 'policy.eval.evaluator.on_ray=true', f'exp_name={tmp_path / "group"}'])
