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
import numpy as np
import torch
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import BaseCallback

from common import EvalLog, write_summary

EVAL_SEED_OFFSET = 10_000  # the eval env's seeds never coincide with the training env's
# rl-baselines3-zoo, hyperparams/dqn.yml, CartPole-v1 (its net_arch is SB3's default [64, 64])
ZOO_CARTPOLE = dict(learning_rate=2.5e-4, batch_size=512, buffer_size=100_000, learning_starts=0, gamma=0.99,
                    target_update_interval=5000, train_freq=16, gradient_steps=4, exploration_fraction=0.06,
                    exploration_final_eps=0.11)


def evaluate(model: DQN, env: gym.Env, episodes: int) -> tuple[np.ndarray, np.ndarray]:
    returns, lengths = np.zeros(episodes), np.zeros(episodes)
    for i in range(episodes):
        obs, _ = env.reset()
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(action)
            returns[i] += reward
            lengths[i] += 1
            done = terminated or truncated
    return returns, lengths


class PeriodicEval(BaseCallback):
    def __init__(self, eval_env: gym.Env, log: EvalLog, every: int, episodes: int, start: float) -> None:
        super().__init__()
        self.eval_env, self.log, self.every, self.episodes, self.start = eval_env, log, every, episodes, start

    def _evaluate(self) -> None:
        returns, lengths = evaluate(self.model, self.eval_env, self.episodes)
        self.log.write(self.num_timesteps, self.model._n_updates, time.perf_counter() - self.start,
                       float(returns.mean()), float(returns.std()), float(lengths.mean()))

    def _on_training_start(self) -> None:
        self._evaluate()

    def _on_step(self) -> bool:
        if self.num_timesteps % self.every == 0:
            self._evaluate()
        return True


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
