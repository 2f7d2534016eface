"""Stable-Baselines3 TD3 with rl-baselines3-zoo's hyperparameters (its `hyperparams/td3.yml`), for `td3.py`.

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the same run folder
as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function. Evaluation is the deterministic
policy on a separate env, before learning and every `--eval-every` env steps; its time counts in the wall time, as
it does on tidal's side.
"""
import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import TD3
from stable_baselines3.common.noise import NormalActionNoise

from sb3_sac_runner import learn_and_record  # the same deterministic evaluation every `every` steps

# rl-baselines3-zoo, hyperparams/td3.yml (as it stands since January 2024; read at zoo v2.8.0): Pendulum-v1, and the
# settings it gives the MuJoCo envs (Hopper among them); the rest is SB3's TD3 default (tau 0.005, policy_delay 2,
# target noise 0.2 clipped at 0.5, batch 256)
ZOO = {
    'Pendulum-v1': dict(gamma=0.98, buffer_size=200_000, learning_starts=10_000, learning_rate=1e-3,
                        train_freq=1, gradient_steps=1, policy_kwargs=dict(net_arch=[400, 300])),
    'Hopper-v5': dict(learning_starts=10_000, learning_rate=1e-3, batch_size=256, train_freq=1, gradient_steps=1,
                      policy_kwargs=dict(net_arch=[400, 300])),
}
NOISE_STD = 0.1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--env-id', default='Pendulum-v1', choices=sorted(ZOO))
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=20_000)
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=2000)
    parser.add_argument('--eval-episodes', type=int, default=10)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    env = gym.make(args.env_id)
    dims = env.action_space.shape[0]
    noise = NormalActionNoise(mean=np.zeros(dims), sigma=NOISE_STD * np.ones(dims))
    model = TD3('MlpPolicy', env, action_noise=noise, seed=args.seed, device='cpu', verbose=0, **ZOO[args.env_id])
    learn_and_record(model, args, {**ZOO[args.env_id], 'noise_std': NOISE_STD})


if __name__ == '__main__':
    main()
