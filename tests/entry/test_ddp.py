"""Several learner processes (DDP, gloo on CPU): an update equals one on the ranks' batches together
(gradients averaged before they are clipped), and a torchrun training run writes one run folder, counting
the env steps of all ranks."""
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
from tidal.policies.common import optimizer_step
from tidal.worker.distributed import Lockstep, average_gradients, init_distributed, learn_optimizers

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
    Lockstep(context).start(policy.views())  # rank 0's weights, gradients averaged
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


PPO_BATCH = 16


def small_ppo_cfg():
    """PPO whose gradient norm is always clipped (max norm 1e-3), with no per-batch advantage
    normalisation: its loss is then a plain mean over the batch."""
    main_config, create_config = resolve_config_source('cartpole_ppo')
    return compile_config(main_config, create_config, seed=0, overrides=[
        'policy.model.encoder_hidden_sizes=[16,16]', 'policy.learn.grad_clip_norm=0.001',
        'policy.learn.adv_norm=False', 'policy.learn.entropy_weight=0.01'])


def ppo_batch():
    generator = torch.Generator().manual_seed(2)
    return {'obs': torch.randn(PPO_BATCH, 4, generator=generator),
            'action': torch.randint(0, 2, (PPO_BATCH,), generator=generator),
            'log_prob': torch.full((PPO_BATCH,), -0.69) + 0.1 * torch.randn(PPO_BATCH, generator=generator),
            'value': torch.randn(PPO_BATCH, generator=generator),
            'return': torch.randn(PPO_BATCH, generator=generator),
            'advantage': torch.randn(PPO_BATCH, generator=generator)}


def one_clipped_ddp_update(rank, port, out_path):
    os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE='2', MASTER_ADDR='127.0.0.1',
                      MASTER_PORT=str(port))
    torch.set_num_threads(1)
    context = init_distributed(torch.device('cpu'))
    torch.manual_seed(200 + rank)
    policy = build_policy(small_ppo_cfg())
    Lockstep(context).start(policy.views())
    half = PPO_BATCH // 2
    info = policy.learn_mode.forward({key: value[rank * half:(rank + 1) * half] for key, value in ppo_batch().items()})
    if rank == 0:
        torch.save({'state': learn_state(policy), 'grad_norm': info['grad_norm']}, out_path)
    torch.distributed.barrier()
    torch.distributed.destroy_process_group()


def test_ddp_averages_gradients_before_clipping_them(tmp_path):
    """With clipping active, the mean of the ranks' clipped gradients would differ from the clipped
    mean (and each rank would log its own norm): two ranks must make the single process's update on the
    whole batch, weights, Adam moments and the logged grad_norm alike."""
    out_path = tmp_path / 'rank0.pt'
    mp.spawn(one_clipped_ddp_update, args=(free_port(), str(out_path)), nprocs=2, join=True)
    torch.manual_seed(200)
    single = build_policy(small_ppo_cfg())
    before = learn_state(single)
    info = single.learn_mode.forward(ppo_batch())
    assert info['grad_norm'] > 0.01  # 10 times the max norm at least: the clipping bites
    got = torch.load(out_path, weights_only=True)
    torch.testing.assert_close(got['grad_norm'], info['grad_norm'], rtol=1e-5, atol=1e-6)
    expected = learn_state(single)
    assert got['state'].keys() == expected.keys()
    for path, tensor in expected.items():
        torch.testing.assert_close(got['state'][path], tensor, rtol=0, atol=1e-6, msg=f'{path} differs')
    assert any(not torch.equal(before[path], expected[path]) for path in before if path[0] == 'model')


def test_every_optimizer_of_a_policy_is_listed_for_averaging():
    """DDP reads the optimizers from the learn view (and from the extra views that are learn modes)."""
    sac = build_policy(small_discrete_sac_cfg())
    assert learn_optimizers(sac.views()) == [sac._optimizer_q, sac._optimizer_policy]
    main_config, create_config = resolve_config_source('cartpole_ppg')
    ppg = build_policy(compile_config(main_config, create_config, seed=0))
    assert learn_optimizers(ppg.views()) == [ppg._optimizer, ppg._aux_optimizer]


def test_a_plain_optimizer_step_is_averaged_once(monkeypatch):
    """A step through the helpers averages before clipping; a policy's own `optimizer.step()` still
    averages, just before the step; neither averages twice."""
    import tidal.worker.distributed as distributed
    calls = []
    monkeypatch.setattr(distributed, 'all_reduce_mean_gradients', lambda context, opt: calls.append(opt))
    param = torch.nn.Parameter(torch.ones(2))
    optimizer = torch.optim.SGD([param], lr=0.1)
    average_gradients(distributed.DistContext(rank=0, world_size=2), [optimizer])
    optimizer_step(optimizer, (param * 2).sum())
    assert calls == [optimizer]
    optimizer.zero_grad()
    (param * 2).sum().backward()
    optimizer.step()
    assert calls == [optimizer, optimizer]


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
