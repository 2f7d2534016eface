"""Stable-Baselines3 PPO or A2C with SB3's own defaults (`PPO('MlpPolicy', env)`, one env or `--n-envs`) on a gym env.

Runs inside the SB3 virtual environment (`benchmarks/.venv-sb3`), never in tidal's, and writes the
same run folder as `tidal train` (`evals.csv`, `summary.json`) so both are read by one function.
Evaluation is the deterministic policy on a separate set of envs, once before learning and then after
the update phase of the rollout that crosses each `--eval-every` env steps (with the defaults'
2048-step rollouts and `--eval-every 2048`: after every update phase, as tidal evaluates once per
rollout); its time counts in the wall time, as it does on tidal's side.
"""
import argparse
import importlib.metadata
import json
import math
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3 import A2C, PPO
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

from common import EvalLog, write_summary

EVAL_SEED_OFFSET = 10_000  # the eval envs' seeds never coincide with the training env's
ALGORITHMS = {'ppo': PPO, 'a2c': A2C}


def evaluate(model: PPO | A2C, envs: list[gym.Env], episodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of `episodes` deterministic episodes, split evenly over `envs` beforehand
    (as tidal's evaluator does) and stepped as one batch."""
    quota = np.full(len(envs), episodes // len(envs))
    quota[:episodes % len(envs)] += 1
    obs = np.stack([env.reset()[0] for env in envs])
    running_return, running_length = np.zeros(len(envs)), np.zeros(len(envs), dtype=np.int64)
    returns, lengths = [], []
    while (quota > 0).any():
        active = np.flatnonzero(quota > 0)
        actions, _ = model.predict(obs[active], deterministic=True)
        for i, action in zip(active, actions):
            obs[i], reward, terminated, truncated, _ = envs[i].step(action)
            running_return[i] += reward
            running_length[i] += 1
            if terminated or truncated:
                returns.append(running_return[i])
                lengths.append(running_length[i])
                quota[i] -= 1
                running_return[i], running_length[i] = 0.0, 0
                if quota[i] > 0:
                    obs[i] = envs[i].reset()[0]
    return np.asarray(returns), np.asarray(lengths)


class RolloutEval(BaseCallback):
    """Evaluates before learning and after each update phase that ends `every` or more env steps past
    the previous evaluation (SB3 calls `_on_rollout_start` right after `train()`), and at the end.

    The logged train_iter counts minibatch updates, as tidal's does: SB3's `_n_updates` counts epochs.
    """

    def __init__(self, eval_envs: list[gym.Env], log: EvalLog, every: int, episodes: int, start: float) -> None:
        super().__init__()
        self.eval_envs, self.log, self.every, self.episodes, self.start = eval_envs, log, every, episodes, start
        self.last_eval_step: int | None = None

    def minibatch_updates(self) -> int:
        rollout = self.model.n_steps * self.model.n_envs
        batch = getattr(self.model, 'batch_size', rollout)  # A2C: one update of the whole rollout
        return self.model._n_updates * math.ceil(rollout / batch)

    def _evaluate(self) -> None:
        returns, lengths = evaluate(self.model, self.eval_envs, self.episodes)
        self.log.write(self.num_timesteps, self.minibatch_updates(), time.perf_counter() - self.start,
                       float(returns.mean()), float(returns.std()), float(lengths.mean()))
        self.last_eval_step = self.num_timesteps

    def _on_training_start(self) -> None:
        self._evaluate()

    def _on_rollout_start(self) -> None:
        if self.num_timesteps - self.last_eval_step >= self.every:
            self._evaluate()

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        if self.last_eval_step != self.num_timesteps:
            self._evaluate()


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--algo', choices=['ppo', 'a2c'], default='ppo', help="SB3's algorithm, with its defaults")
    parser.add_argument('--env-id', default='CartPole-v1')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, default=51_200,
                        help='env steps to train for (SB3 rounds up to whole 2048-step rollouts)')
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--eval-every', type=int, default=2048, help='env steps between evaluations')
    parser.add_argument('--eval-episodes', type=int, default=10)
    parser.add_argument('--eval-envs', type=int, default=None, help='eval envs (default: one per episode)')
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads')
    parser.add_argument('--n-envs', type=int, default=1,
                        help='training envs (a DummyVecEnv; a rollout is n_steps of each, 2048 by default)')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    train_env = gym.make(args.env_id) if args.n_envs == 1 else make_vec_env(args.env_id, n_envs=args.n_envs,
                                                                             seed=args.seed)
    model = ALGORITHMS[args.algo]('MlpPolicy', train_env, seed=args.seed, device='cpu', verbose=0)
    eval_envs = [gym.make(args.env_id) for _ in range(args.eval_envs or args.eval_episodes)]
    for i, env in enumerate(eval_envs):
        env.reset(seed=args.seed + EVAL_SEED_OFFSET + i)

    log = EvalLog(args.run_dir)
    callback = RolloutEval(eval_envs, log, args.eval_every, args.eval_episodes, time.perf_counter())
    model.learn(total_timesteps=args.steps, callback=callback)
    wall_time = time.perf_counter() - callback.start
    log.close()

    summary = write_summary(args.run_dir, model.num_timesteps, callback.minibatch_updates(), wall_time)
    settings = {name: getattr(model, name, None) for name in ('n_steps', 'batch_size', 'n_epochs', 'gamma',
                                                               'gae_lambda', 'ent_coef', 'vf_coef', 'max_grad_norm',
                                                               'normalize_advantage', 'target_kl')}
    settings.update(learning_rate=model.learning_rate, net_arch=model.policy.net_arch,
                    activation_fn=model.policy.activation_fn.__name__, ortho_init=model.policy.ortho_init,
                    optimizer=type(model.policy.optimizer).__name__, optimizer_kwargs=model.policy.optimizer_kwargs)
    if args.algo == 'ppo':
        settings.update(clip_range=model.clip_range(1.0),
                        clip_range_vf=None if model.clip_range_vf is None else model.clip_range_vf(1.0))
    info = {'library': 'stable-baselines3', 'algorithm': args.algo.upper(), 'env_id': args.env_id, 'seed': args.seed,
            'n_envs': args.n_envs,
            'threads': args.threads, 'eval_every': args.eval_every, 'eval_episodes': args.eval_episodes,
            'eval_envs': len(eval_envs), 'settings': settings,
            'versions': {name: importlib.metadata.version(name)
                         for name in ('stable-baselines3', 'torch', 'gymnasium', 'numpy')}}
    (args.run_dir / 'run_info.json').write_text(json.dumps(info, indent=2) + '\n')
    print(json.dumps(summary))


if __name__ == '__main__':
    main()
