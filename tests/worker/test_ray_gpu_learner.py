"""A learner on a GPU with Ray workers on CPUs (`policy.device='cuda'`, `collector.type='ray'`): the workers
and the eval actor build the policy on the CPU whatever device the learner's config names."""
import pytest
import torch

pytest.importorskip('ray')

from tidal.config.tree import to_plain  # noqa: E402
from tidal.entry.setup import load_config  # noqa: E402
from tidal.worker.ray_evaluator import EvalWorker  # noqa: E402
from tidal.worker.ray_worker import RolloutWorker  # noqa: E402

PPO = ['env.collector_env_num=2', 'policy.collect.n_sample=32', 'env.n_evaluator_episode=1',
       'env.evaluator_env_num=1', 'collector.type=ray', 'collector.num_workers=1']


def gpu_learner_config():
    """cartpole_ppo as a GPU learner's config reads (both ways of naming the device), built on any machine."""
    cfg = to_plain(load_config('cartpole_ppo', 0, PPO))
    cfg['policy'].update(device='cuda', cuda=True)
    return cfg


def test_rollout_workers_act_on_the_cpu_for_a_gpu_learner():
    worker = RolloutWorker(gpu_learner_config(), index=0, first_env=0, num_envs=2, import_path=[])
    worker.reset(seed=0)
    result = worker.collect(None, 32, random=False)
    assert worker.policy.device == torch.device('cpu')
    assert result['steps'] == 16 and result['sample']['action'].shape[0] == 32


def test_the_eval_actor_evaluates_on_the_cpu_for_a_gpu_learner():
    worker = EvalWorker(gpu_learner_config(), seed=10_000, import_path=[])
    returns, lengths = worker.evaluate(worker.policy.weights(), train_iter=0, env_step=0)
    assert worker.policy.device == torch.device('cpu')
    assert returns.shape == (1,) and lengths[0] == returns[0]  # CartPole: one reward per step


@pytest.mark.gpu
def test_a_gpu_learner_trains_from_cpu_workers(tmp_path):
    from tidal import serial_pipeline_onpolicy
    policy = serial_pipeline_onpolicy('cartpole_ppo', seed=0, max_env_step=256, progress=False,
                                      overrides=[*PPO, 'policy.device=cuda', 'collector.mode=async',
                                                 'policy.eval.evaluator.on_ray=true', f'exp_name={tmp_path / "gpu"}'])
    assert next(policy.model.parameters()).device.type == 'cuda'
