"""RLlib PPO (new API stack) on CartPole-v1 with a set sleep per env step, for `scale.py`'s scaling runs.

Runs inside the RLlib virtual environment (`benchmarks/.venv-rllib`, made by `common.ensure_rllib_venv()`).
tidal is not installed there, so the env cost is this file's own wrapper, the same as `tidal/SimulatedCost-v0`:
sleep `--step-seconds`, then step the wrapped env. Writes the run folder of `common.py` (`evals.csv`,
`summary.json`) plus `iterations.csv`, one row per training iteration (wall time, env steps, learn seconds),
from which `scale.py` takes the steady-state rate:

    OMP_NUM_THREADS=1 benchmarks/.venv-rllib/bin/python benchmarks/rllib_scale_runner.py \\
        --num-env-runners 8 --step-seconds 0.01 --max-env-step 20480 --out RUN_DIR

N env runners of one env each, `ROLLOUT_FRAGMENT` steps each per iteration (train batch 64 x N), one local
Learner in the driver; the PPO settings are `scale.py`'s (tidal's `cartpole_ppo` with its decays and
normalisation off). Evaluation (one deterministic episode, `rllib_ppo_runner.evaluate`) runs before learning
and at the end only, on a CartPole-v1 without the sleep: it is outside the steady state either way.
"""
import argparse
import csv
import importlib.metadata
import json
import math
import time
from pathlib import Path

import gymnasium as gym
import torch

from common import EvalLog, write_summary
from rllib_ppo_runner import CallTimer, build_algo, evaluate

ENV_ID = 'CartPole-v1'
EVAL_SEED_OFFSET = 10_000
ROLLOUT_FRAGMENT = 64   # env steps per runner per iteration
MINIBATCH = 128
EPOCHS = 10
LR = 1e-3
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP = 0.2
ENTROPY_COEF = 0.0
VALUE_COEF = 0.5
GRAD_CLIP = 0.5
HIDDEN = [64, 64]
ACTIVATION = 'tanh'


class SleepPerStep(gym.Wrapper):
    """`ENV_ID` whose every step first sleeps `step_seconds` (the CPU stays free)."""

    def __init__(self, step_seconds: float) -> None:
        super().__init__(gym.make(ENV_ID))
        self.step_seconds = step_seconds

    def step(self, action):
        time.sleep(self.step_seconds)
        return self.env.step(action)


def make_env(env_config: dict) -> gym.Env:
    return SleepPerStep(env_config['step_seconds'])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--num-env-runners', type=int, required=True, help='EnvRunner actors, one env each')
    parser.add_argument('--step-seconds', type=float, required=True, help='sleep per env step')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--max-env-step', type=int, required=True, help='env steps (whole iterations, rounded up)')
    parser.add_argument('--threads', type=int, default=1, help='torch threads of the driver (learner)')
    parser.add_argument('--out', type=Path, required=True, help='run folder')
    args = parser.parse_args()
    if args.num_env_runners < 1:
        parser.error('--num-env-runners must be >= 1')
    return args


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
    from ray.tune.registry import register_env

    register_env('scale_cartpole', make_env)
    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment('scale_cartpole', env_config={'step_seconds': args.step_seconds})
        .framework('torch')
        .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=1, num_cpus_per_env_runner=1,
                     rollout_fragment_length=ROLLOUT_FRAGMENT, batch_mode='truncate_episodes')
        .learners(num_learners=0)
        # RLlib refuses a minibatch larger than the train batch; tidal then learns on the whole 64-step batch too
        .training(train_batch_size_per_learner=ROLLOUT_FRAGMENT * args.num_env_runners,
                  minibatch_size=min(MINIBATCH, ROLLOUT_FRAGMENT * args.num_env_runners),
                  num_epochs=EPOCHS, lr=LR, gamma=GAMMA, lambda_=GAE_LAMBDA, clip_param=CLIP,
                  entropy_coeff=ENTROPY_COEF, vf_loss_coeff=VALUE_COEF, grad_clip=GRAD_CLIP,
                  grad_clip_by='global_norm', use_kl_loss=False, vf_clip_param=float('inf'),
                  shuffle_batch_per_epoch=True)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=HIDDEN, fcnet_activation=ACTIVATION,
                                                   vf_share_layers=False))
        .debugging(seed=args.seed, log_level='ERROR')
    )


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    import ray
    from ray.rllib.algorithms.ppo import ppo as ppo_module
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, EPISODE_RETURN_MEAN, NUM_ENV_STEPS_SAMPLED_LIFETIME

    setup_start = time.perf_counter()
    algo = build_algo(build_config(args), args.num_env_runners)
    setup_time = time.perf_counter() - setup_start
    learn_timer = CallTimer(algo.learner_group, 'update')
    sample_timer = CallTimer(ppo_module, 'synchronous_parallel_sample')

    eval_env = gym.make(ENV_ID)
    eval_env.reset(seed=args.seed + EVAL_SEED_OFFSET)
    log = EvalLog(args.out)
    env_step, train_iter = 0, 0
    start = time.perf_counter()

    def run_eval() -> None:
        returns, lengths = evaluate(algo.get_module(), [eval_env], 1)
        log.write(env_step, train_iter, time.perf_counter() - start, float(returns.mean()), float(returns.std()),
                  float(lengths.mean()))

    run_eval()
    with open(args.out / 'iterations.csv', 'w', newline='') as f:
        rows = csv.writer(f)
        rows.writerow(['wall_time', 'env_step', 'train_iter', 'learn_seconds', 'sample_seconds',
                       'episode_return_mean'])
        while env_step < args.max_env_step:
            result = algo.train()
            sampled = int(result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
            train_iter += EPOCHS * math.ceil((sampled - env_step) / MINIBATCH)
            env_step = sampled
            episode_return = result[ENV_RUNNER_RESULTS].get(EPISODE_RETURN_MEAN, math.nan)
            rows.writerow([f'{time.perf_counter() - start:.4f}', env_step, train_iter, f'{learn_timer.total:.4f}',
                           f'{sample_timer.total:.4f}', f'{episode_return:.2f}'])
            f.flush()
    run_eval()
    wall_time = time.perf_counter() - start
    log.close()

    summary = write_summary(args.out, env_step, train_iter, wall_time)
    summary.update(setup_time=round(setup_time, 3), learn_time=round(learn_timer.total, 3),
                   sample_time=round(sample_timer.total, 3), num_env_runners=args.num_env_runners,
                   step_seconds=args.step_seconds,
                   versions={name: importlib.metadata.version(name) for name in ('ray', 'torch', 'gymnasium')})
    (args.out / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')
    algo.stop()
    ray.shutdown()
    print(json.dumps(summary))


if __name__ == '__main__':
    main()
