"""Stable-Baselines3 DQN with rl-baselines3-zoo's CartPole-v1 hyperparameters (its `hyperparams/dqn.yml`), for
`dqn_cartpole.py`.

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the same run folder
as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function. Evaluation is the greedy policy
on a separate env, before learning and every `--eval-every` env steps; its time counts in the wall time, as it
does on tidal's side.
"""
import argparse
from pathlib import Path

import gymnasium as gym
import torch
from stable_baselines3 import DQN

from sb3_sac_runner import learn_and_record  # the periodic greedy evaluation and the run record

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
    learn_and_record(model, args, ZOO_CARTPOLE)


if __name__ == '__main__':
    main()
