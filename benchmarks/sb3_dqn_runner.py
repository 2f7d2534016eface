"""Stable-Baselines3 DQN with rl-baselines3-zoo's CartPole-v1 hyperparameters (its `hyperparams/dqn.yml`), for
`dqn_cartpole.py`.

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the same run folder
as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function. Evaluation is the greedy policy
on a separate env, before learning and every `--eval-every` env steps; its time counts in the wall time, as it
does on tidal's side.
"""
import argparse
import importlib.metadata
import json
import time
from pathlib import Path

import gymnasium as gym
import torch
from stable_baselines3 import DQN

from common import EvalLog, write_summary
from sb3_sac_runner import EVAL_SEED_OFFSET, PeriodicEval  # the same greedy evaluation every `every` env steps

# rl-baselines3-zoo, hyperparams/dqn.yml, CartPole-v1 (its net_arch is SB3's default [64, 64])
ZOO_CARTPOLE = dict(learning_rate=2.5e-4, batch_size=512, buffer_size=100_000, learning_starts=0, gamma=0.99,
                    target_update_interval=5000, train_freq=16, gradient_steps=4, exploration_fraction=0.06,
                    exploration_final_eps=0.11)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-id', default='CartPole-v1')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=200_000)
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=5000)
    parser.add_argument('--eval-episodes', type=int, default=10)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    model = DQN('MlpPolicy', gym.make(args.env_id), seed=args.seed, device='cpu', verbose=0, **ZOO_CARTPOLE)
    eval_env = gym.make(args.env_id)
    eval_env.reset(seed=args.seed + EVAL_SEED_OFFSET)
    log = EvalLog(args.run_dir)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps,
                callback=PeriodicEval(eval_env, log, args.eval_every, args.eval_episodes, start))
    wall_time = time.perf_counter() - start
    log.close()
    summary = write_summary(args.run_dir, model.num_timesteps, model._n_updates, wall_time)
    info = {'library': 'stable-baselines3', 'env_id': args.env_id, 'seed': args.seed, 'threads': args.threads,
            'settings': ZOO_CARTPOLE,
            'versions': {name: importlib.metadata.version(name)
                         for name in ('stable-baselines3', 'torch', 'gymnasium', 'numpy')}}
    (args.run_dir / 'run_info.json').write_text(json.dumps(info, indent=2) + '\n')
    print(json.dumps(summary))


if __name__ == '__main__':
    main()
