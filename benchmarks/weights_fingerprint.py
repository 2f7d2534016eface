"""Fingerprints of the learn state after short seed-0 runs: a refactor that must not change behaviour
keeps every fingerprint bit for bit.

    python benchmarks/weights_fingerprint.py -o before.json
    python benchmarks/weights_fingerprint.py --compare before.json

Each run is a few hundred env steps with updates, in a temporary folder; the fingerprint is a SHA-256
over every tensor of `learn_mode.state_dict()` (networks, optimizers, temperatures), in key order.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
from typing import Any

import torch

# (zoo config, env steps, overrides): each run makes updates within its budget
RUNS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    'sac': ('pendulum_sac', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64')),
    'sac_v': ('pendulum_sac_v', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64')),
    'discrete_sac': ('cartpole_discrete_sac', 400, ('policy.random_collect_size=200',)),
    'dqn': ('cartpole_dqn', 400, ('policy.random_collect_size=200',)),
    'sql': ('cartpole_sql', 400, ('policy.random_collect_size=200',)),
    'td3': ('pendulum_td3', 400, ('policy.random_collect_size=200', 'policy.collect.n_sample=100',
                                  'policy.learn.update_per_collect=100', 'policy.learn.batch_size=64')),
    'ddpg': ('pendulum_ddpg', 400, ('policy.random_collect_size=200', 'policy.collect.n_sample=100',
                                    'policy.learn.update_per_collect=100', 'policy.learn.batch_size=64')),
    'masac': ('mpe_spread_sac', 800, ('policy.random_collect_size=400', 'policy.learn.update_per_collect=4',
                                      'policy.collect.n_sample=200')),
    'ppo': ('cartpole_ppo', 1024, ()),
    'a2c': ('cartpole_a2c', 800, ()),
    'ppg': ('cartpole_ppg', 2048, ()),
    'taac': ('pendulum_taac', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64')),
    'taac_l': ('pendulum_taac_l', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64')),
    'taac_q': ('pendulum_taac_q', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64')),
    'sqil_sac': ('pendulum_sqil_sac', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=64',
                                            'policy.expert_data_path=sac_expert.npz')),
    'sqil': ('cartpole_sqil', 400, ('policy.random_collect_size=200', 'policy.collect.model_path=dqn_expert',
                                    'policy.collect.expert_episodes=2')),
    'muzero': ('cartpole_muzero', 400, ('policy.random_collect_size=200', 'policy.learn.batch_size=32')),
    'muzero_repr': ('cartpole_muzero_repr_ppo', 2048, ('policy.repr.training.initial_collect_steps=512',)),
}


def fingerprint(tree: Any, digest: Any) -> None:
    if isinstance(tree, dict):
        for key in sorted(tree, key=str):
            digest.update(str(key).encode())
            fingerprint(tree[key], digest)
    elif isinstance(tree, (list, tuple)):
        for item in tree:
            fingerprint(item, digest)
    elif isinstance(tree, torch.Tensor):
        digest.update(str(tree.dtype).encode() + str(tuple(tree.shape)).encode())
        digest.update(tree.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes())
    else:
        digest.update(repr(tree).encode())


def sac_expert_demos() -> None:
    """sac_expert.npz: 2 episodes of a short SAC run, the demonstrations of the sqil_sac run."""
    from tidal.entry.demos import collect_demos
    from tidal.entry.pipelines import train
    train('pendulum_sac', seed=0, max_env_step=400, overrides=(*RUNS['sac'][2], 'exp_name=sac_expert'),
          progress=False)
    collect_demos('pendulum_sac', 'sac_expert/ckpt/latest.pt', 2, 'sac_expert.npz', seed=0)


def dqn_expert_run() -> None:
    """dqn_expert/: a short DQN run, the expert checkpoint the sqil run records its demonstrations from."""
    from tidal.entry.pipelines import train
    train('cartpole_dqn', seed=0, max_env_step=400, overrides=(*RUNS['dqn'][2], 'exp_name=dqn_expert'),
          progress=False)


#: What a run needs in its folder first (the imitation runs' expert data).
PREPARE = {'sqil_sac': sac_expert_demos, 'sqil': dqn_expert_run}


def run(name: str) -> str:
    from tidal.entry.pipelines import train
    config, steps, overrides = RUNS[name]
    if name in PREPARE:
        PREPARE[name]()
    policy = train(config, seed=0, max_env_step=steps, overrides=overrides, progress=False)
    digest = hashlib.sha256()
    fingerprint(policy.learn_mode.state_dict(), digest)
    return digest.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-o', '--output', help='write the fingerprints to this JSON file')
    parser.add_argument('--compare', help='compare with the fingerprints in this JSON file')
    parser.add_argument('names', nargs='*', default=list(RUNS))
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        here = os.getcwd()
        os.chdir(folder)
        try:
            for name in args.names:
                results[name] = run(name)
                print(f'{name}: {results[name]}', flush=True)
        finally:
            os.chdir(here)
    if args.output:
        with open(args.output, 'w', encoding='utf-8') as file:
            json.dump(results, file, indent=1)
    if args.compare:
        with open(args.compare, encoding='utf-8') as file:
            before = json.load(file)
        changed = [name for name in results if before.get(name) != results[name]]
        print('bit-identical: ' + ', '.join(name for name in results if name not in changed))
        if changed:
            print('CHANGED: ' + ', '.join(changed))
            sys.exit(1)


if __name__ == '__main__':
    main()
