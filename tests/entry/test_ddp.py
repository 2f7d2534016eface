"""Several learner processes (DDP, gloo on CPU): an update equals one on the ranks' batches together,
and a torchrun training run writes one run folder, counting the env steps of all ranks."""
import csv
import json
import os
import socket
import subprocess
import sys

import torch
import torch.multiprocessing as mp

from tidal.config import compile_config, resolve_config_source
from tidal.worker.builders import build_policy
from tidal.worker.checkpoint import load_checkpoint
from tidal.worker.distributed import average_gradients_on_step, broadcast_state, find_optimizers, init_distributed

BATCH = 8  # rows of the whole batch; each of the 2 ranks learns from half of it


def small_discrete_sac_cfg():
    main_config, create_config = resolve_config_source('cartpole_discrete_sac')
    return compile_config(main_config, create_config, seed=0, overrides=[
        'policy.model.actor_hidden_sizes=[16,16]', 'policy.model.critic_hidden_sizes=[16,16]'])


def fixed_batch():
    generator = torch.Generator().manual_seed(1)
    return {'obs': torch.randn(BATCH, 4, generator=generator), 'next_obs': torch.randn(BATCH, 4, generator=generator),
            'action': torch.randint(0, 2, (BATCH,), generator=generator),
            'reward': torch.randn(BATCH, generator=generator),
            'terminated': torch.tensor([False, True] * (BATCH // 2)), 'truncated': torch.zeros(BATCH, dtype=torch.bool)}


def learn_state(policy):
    """Every tensor of the learn state (weights, targets, temperature, Adam moments), by key path."""
    def flatten(obj, path=()):
        if isinstance(obj, torch.Tensor):
            yield path, obj
        elif isinstance(obj, dict):
            for key, value in obj.items():
                yield from flatten(value, (*path, key))
        elif isinstance(obj, (list, tuple)):
            for index, value in enumerate(obj):
                yield from flatten(value, (*path, index))
    return {path: tensor.clone() for path, tensor in flatten(policy.learn_mode.state_dict())}


def one_ddp_update(rank, port, out_path):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE='2', MASTER_ADDR='127.0.0.1',
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    context = init_distributed(torch.device('cpu'))
    torch.manual_seed(100 + rank)  # different initial weights: the broadcast must make them rank 0's
    policy = build_policy(small_discrete_sac_cfg())
    policy.learn_mode.load_state_dict(broadcast_state(context, policy.learn_mode.state_dict()))
    for optimizer in find_optimizers(policy):
        average_gradients_on_step(context, optimizer)
    half = BATCH // 2
    policy.learn_mode.forward({key: value[rank * half:(rank + 1) * half] for key, value in fixed_batch().items()})
    if rank == 0:
        torch.save(learn_state(policy), out_path)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def test_ddp_update_equals_one_process_update_on_concatenated_batch(tmp_path):
    """Discrete SAC's losses are exact expectations over actions (no sampled noise) and means over the
    batch, so with equal halves the mean of the ranks' gradients is the gradient on the whole batch:
    two ranks and one process must then make the same update. The Adam moments are compared too:
    after one step Adam moves each weight by about lr * sign(gradient), but its first moment is
    (1 - beta1) * gradient, so a sum instead of a mean (or no averaging) would show there."""
    out_path = tmp_path / 'rank0.pt'
    mp.spawn(one_ddp_update, args=(free_port(), str(out_path)), nprocs=2, join=True)
    torch.manual_seed(100)  # rank 0's initial weights
    single = build_policy(small_discrete_sac_cfg())
    before = learn_state(single)
    single.learn_mode.forward(fixed_batch())
    expected, got = learn_state(single), torch.load(out_path, weights_only=True)
    assert got.keys() == expected.keys()
    assert any(path[0] == 'optimizer_q' and path[-1] == 'exp_avg' for path in expected)
    for path, tensor in expected.items():
        torch.testing.assert_close(got[path], tensor, rtol=0, atol=1e-5, msg=f'{path} differs')
    assert any(not torch.equal(before[path], expected[path]) for path in before if path[0] == 'model')

def test_torchrun_train_writes_one_run_folder_counting_all_ranks_env_steps(tmp_path):
    command = [sys.executable, '-m', 'torch.distributed.run', '--nproc_per_node=2', f'--master_port={free_port()}',
               '-m', 'tidal', 'train', 'pendulum_sac', '--max-env-step', '400', '--exp-name', 'run', '--no-progress',
               '--set', 'policy.random_collect_size=100', '--set', 'policy.eval.evaluator.eval_freq=50',
               '--set', 'policy.learn.batch_size=32', '--set', 'policy.learn.learner.save_ckpt_freq=50',
               '--set', 'env.n_evaluator_episode=1', '--set', 'env.evaluator_env_num=1',
               '--set', 'policy.model.actor_hidden_sizes=[32,32]', '--set', 'policy.model.critic_hidden_sizes=[32,32]']
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=240,
                            env={**os.environ, 'OMP_NUM_THREADS': '1'})
    assert result.returncode == 0, result.stderr
    assert [path.name for path in tmp_path.iterdir()] == ['run']
    run = tmp_path / 'run'
    summary = json.loads((run / 'summary.json').read_text())
    # 400 env steps over both ranks: 200 each, of which 100 are the warm-up, then one update per step
    assert (summary['env_step'], summary['train_iter']) == (400, 100)
    with open(run / 'evals.csv') as f:
        rows = list(csv.DictReader(f))
    assert [int(row['env_step']) for row in rows] == [200, 300, 400]
    assert result.stdout.count('tidal: run ended') == 1
    state = load_checkpoint(run / 'ckpt' / 'latest.pt')  # rank 1's collector and buffer are gathered in
    assert state['world_size'] == 2 and state['ranks'][0]['collector']['env_step'] == 200
