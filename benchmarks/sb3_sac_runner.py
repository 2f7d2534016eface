"""Stable-Baselines3 SAC with the settings of tidal's SAC benchmark runs (Pendulum-v1, MuJoCo tasks).

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the
same run folder as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function.
Evaluation is a deterministic policy on a separate env every `--eval-every` env steps (and once
before learning); its time counts in the wall time, as it does on tidal's side.
"""
import argparse
import importlib.metadata
import json
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import SAC
from stable_baselines3.common.callbacks import BaseCallback

from common import EvalLog, write_summary

EVAL_SEED_OFFSET = 10_000  # the eval env's seeds never coincide with the training env's


def evaluate(model: SAC, env: gym.Env, episodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of `episodes` deterministic episodes."""
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
    """Evaluates every `every` env steps and logs a row with the gradient updates done so far."""

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


def runner_parser(description: str) -> argparse.ArgumentParser:
    """The options of a SAC-family runner (env, warm-up, seed, budget, run folder, evaluation, threads, device)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument('--env-id', default='Pendulum-v1', help='gymnasium env id')
    parser.add_argument('--learning-starts', type=int, default=100, help='random env steps before learning')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=20_000, help='env steps to train for')
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=1000, help='env steps between evaluations')
    parser.add_argument('--eval-episodes', type=int, default=5)
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--device', default='cpu', help="where SB3's networks live: cpu or cuda")
    return parser


def parse_args() -> argparse.Namespace:
    return runner_parser(__doc__.splitlines()[0]).parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    settings = dict(learning_rate=3e-4, buffer_size=1_000_000, learning_starts=args.learning_starts,
                    batch_size=256, tau=0.005, gamma=0.99, train_freq=1, gradient_steps=1, ent_coef='auto',
                    policy_kwargs=dict(net_arch=dict(pi=[256, 256], qf=[256, 256])))
    model = SAC('MlpPolicy', gym.make(args.env_id), seed=args.seed, device=args.device, verbose=0, **settings)
    learn_and_record(model, args, settings)


def learn_and_record(model: Any, args: argparse.Namespace, settings: dict) -> None:
    """Train `model` for args.steps env steps with the periodic evaluation, then write the run folder's summary and
    run_info.json (`settings`: the hyperparameters the runner gave it) and print the summary."""
    eval_env = gym.make(args.env_id)
    eval_env.reset(seed=args.seed + EVAL_SEED_OFFSET)
    log = EvalLog(args.run_dir)
    start = time.perf_counter()
    model.learn(total_timesteps=args.steps,
                callback=PeriodicEval(eval_env, log, args.eval_every, args.eval_episodes, start))
    wall_time = time.perf_counter() - start
    log.close()
    summary = write_summary(args.run_dir, model.num_timesteps, model._n_updates, wall_time)
    info = {'library': 'stable-baselines3', 'algorithm': type(model).__name__, 'env_id': args.env_id,
            'seed': args.seed, 'threads': args.threads, 'device': getattr(args, 'device', 'cpu'),
            'eval_every': args.eval_every, 'eval_episodes': args.eval_episodes, 'settings': settings,
            'versions': {name: importlib.metadata.version(name)
                         for name in ('stable-baselines3', 'sb3-contrib', 'torch', 'gymnasium', 'numpy')}}
    (args.run_dir / 'run_info.json').write_text(json.dumps(info, indent=2) + '\n')
    print(json.dumps(summary))

if __name__ == '__main__':
    main()
