"""RLlib PPO (Ray's RL library, new API stack) on LunarLander-v3, with the PPO settings tidal's runs use.

Runs inside the RLlib virtual environment (`benchmarks/.venv-rllib`, made by `common.ensure_rllib_venv()`),
never in tidal's, and writes the same run folder as `tidal train` (`evals.csv`, `summary.json`) so both are
read by one function:

    OMP_NUM_THREADS=1 benchmarks/.venv-rllib/bin/python benchmarks/rllib_ppo_runner.py \\
        --num-env-runners 2 --envs-per-runner 1 --seed 0 --max-env-step 200000 --out RUN_DIR

Sampling: `--num-env-runners 0` samples in the driver process (RLlib's local EnvRunner); N >= 1 starts N
EnvRunner actors, each stepping `--envs-per-runner` envs (gymnasium's sync vector env); either way one
rollout is `TRAIN_BATCH` env steps in total (RLlib's `rollout_fragment_length='auto'` splits it over the
runners' envs). Learning is one local Learner in the driver (`num_learners=0`). Ray is started here, locally,
(`address='local'`) with `num_cpus = N + 1` logical CPUs (one per EnvRunner actor, one for the driver).

Evaluation mirrors `sb3_ppo_runner.py`: the deterministic policy (argmax of the action logits of the current
RLModule) on separate envs seeded `seed + EVAL_SEED_OFFSET + i`, the episodes split evenly over them
beforehand; once before learning, after each training iteration that ends `--eval-every` or more env steps
past the previous evaluation, and at the end. RLlib's own evaluation EnvRunners are not used.

Timing keys added to summary.json beside `common.write_summary`'s (all in seconds of `time.perf_counter`):
- `wall_time` (common key): from just before the first evaluation to the end of the last, evaluations
  included, as on tidal's and SB3's side; `env_steps_per_s` / `updates_per_s` are over it.
- `setup_time`: `ray.init` plus building the Algorithm (actor start-up), not in `wall_time`.
- `eval_time`: time spent in the evaluations, in `wall_time`.
- `train_time`: `wall_time - eval_time`, i.e. the summed `Algorithm.train()` calls.
- `sample_time` / `learn_time` / `sync_weights_time`: summed exactly over all iterations by timing the
  calls PPO's `training_step` makes (`synchronous_parallel_sample`, `LearnerGroup.update`,
  `EnvRunnerGroup.sync_weights`); RLlib's own `timers` section reports only an EMA per iteration (its last
  values are kept under `rllib_timers_last` for reference).
- `train_env_steps_per_s` = env steps sampled / `train_time` (wall time excluding evaluation time) and
  `sample_env_steps_per_s` = env steps sampled / `sample_time`; env steps sampled is RLlib's
  `env_runners/num_env_steps_sampled_lifetime`.
`train_iter` counts minibatch updates, as tidal's does: RLlib cycles through the rollout in fixed-size
minibatches until every step was used `EPOCHS` times, ceil(epochs x rollout steps / minibatch) per iteration.
"""
import argparse
import importlib.metadata
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from common import EvalLog, write_summary

ENV_ID = 'LunarLander-v3'
EVAL_SEED_OFFSET = 10_000  # the eval envs' seeds never coincide with the training envs'

# PPO settings shared with the tidal PPO this is compared against; every one is passed to RLlib explicitly.
TRAIN_BATCH = 2048      # env steps per iteration, in total over all runners and their envs
MINIBATCH = 64
EPOCHS = 10
LR = 3e-4
GAMMA = 0.99
GAE_LAMBDA = 0.95
CLIP = 0.2
ENTROPY_COEF = 0.01
VALUE_COEF = 0.5
GRAD_CLIP = 0.5         # clipped by global norm, as torch's clip_grad_norm_
HIDDEN = [64, 64]
ACTIVATION = 'tanh'
# RLlib defaults turned off so its PPO is the plain clipped one: no adaptive KL penalty (RLlib's default
# use_kl_loss=True) and no value-function loss clipping (RLlib's default vf_clip_param=10.0; inf disables it).
# Separate policy and value networks (RLlib's DefaultModelConfig shares them by default).
USE_KL_LOSS = False
VF_CLIP = float('inf')
VF_SHARE_LAYERS = False


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--num-env-runners', type=int, default=0,
                        help='EnvRunner actors (0: sample in the driver process)')
    parser.add_argument('--envs-per-runner', type=int, default=1)
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--max-env-step', type=int, default=200_000,
                        help=f'env steps to train for (whole {TRAIN_BATCH}-step iterations, rounded up)')
    parser.add_argument('--eval-every', type=int, default=TRAIN_BATCH, help='env steps between evaluations')
    parser.add_argument('--eval-episodes', type=int, default=10)
    parser.add_argument('--eval-envs', type=int, default=None, help='eval envs (default: one per episode)')
    parser.add_argument('--threads', type=int, default=1, help='torch intra-op threads of the driver (learner)')
    parser.add_argument('--out', type=Path, required=True, help='run folder')
    args = parser.parse_args()
    if args.num_env_runners < 0 or args.envs_per_runner < 1:
        parser.error('--num-env-runners must be >= 0 and --envs-per-runner >= 1')
    return args


def build_config(args: argparse.Namespace):
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig

    return (
        PPOConfig()
        .api_stack(enable_rl_module_and_learner=True, enable_env_runner_and_connector_v2=True)
        .environment(ENV_ID)
        .framework('torch')
        .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=args.envs_per_runner,
                     num_cpus_per_env_runner=1, rollout_fragment_length='auto',
                     batch_mode='truncate_episodes')
        .learners(num_learners=0)
        .training(train_batch_size_per_learner=TRAIN_BATCH, minibatch_size=MINIBATCH, num_epochs=EPOCHS,
                  lr=LR, gamma=GAMMA, lambda_=GAE_LAMBDA, clip_param=CLIP, entropy_coeff=ENTROPY_COEF,
                  vf_loss_coeff=VALUE_COEF, grad_clip=GRAD_CLIP, grad_clip_by='global_norm',
                  use_kl_loss=USE_KL_LOSS, vf_clip_param=VF_CLIP, shuffle_batch_per_epoch=True)
        .rl_module(model_config=DefaultModelConfig(fcnet_hiddens=HIDDEN, fcnet_activation=ACTIVATION,
                                                   vf_share_layers=VF_SHARE_LAYERS))
        .debugging(seed=args.seed, log_level='ERROR')
        .reporting(metrics_num_episodes_for_smoothing=100)
    )


class CallTimer:
    """Replaces `owner.name` with a wrapper summing the seconds spent in it."""

    def __init__(self, owner, name: str) -> None:
        self.total = 0.0
        inner = getattr(owner, name)

        def timed(*a, **kw):
            t0 = time.perf_counter()
            try:
                return inner(*a, **kw)
            finally:
                self.total += time.perf_counter() - t0

        setattr(owner, name, timed)


def evaluate(module, envs: list[gym.Env], episodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Returns and lengths of `episodes` deterministic episodes (argmax of the RLModule's logits), split evenly
    over `envs` beforehand (as tidal's evaluator does) and stepped as one batch."""
    from ray.rllib.core.columns import Columns

    quota = np.full(len(envs), episodes // len(envs))
    quota[:episodes % len(envs)] += 1
    obs = np.stack([env.reset()[0] for env in envs])
    running_return, running_length = np.zeros(len(envs)), np.zeros(len(envs), dtype=np.int64)
    returns, lengths = [], []
    while (quota > 0).any():
        active = np.flatnonzero(quota > 0)
        with torch.no_grad():
            out = module.forward_inference({Columns.OBS: torch.as_tensor(obs[active], dtype=torch.float32)})
        actions = out[Columns.ACTION_DIST_INPUTS].argmax(dim=-1).numpy()
        for i, action in zip(active, actions):
            obs[i], reward, terminated, truncated, _ = envs[i].step(int(action))
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


def build_algo(config: Any, num_env_runners: int) -> Any:
    """The algorithm of `config` on a new local Ray of num_env_runners + 1 CPUs, its driver's weights synced."""
    import ray
    # address='local': always a new Ray instance of our own, never one found running on the machine (a plain
    # `ray.init()` joins a cluster named by RAY_ADDRESS or one started with `ray start`).
    ray.init(address='local', num_cpus=num_env_runners + 1, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR)
    algo = config.build_algo()
    # With remote EnvRunners the driver's local EnvRunner (whose RLModule `get_module()` returns and the
    # evaluation uses) keeps its own random init until the first training step syncs it: sync it now, so the
    # first evaluation sees the learner's initial weights.
    algo.env_runner_group.sync_weights(from_worker_or_learner_group=algo.learner_group, inference_only=True)
    return algo


def main() -> None:
    args = parse_args()
    torch.set_num_threads(args.threads)
    import ray
    from ray.rllib.algorithms.ppo import ppo as ppo_module
    from ray.rllib.utils.metrics import ENV_RUNNER_RESULTS, NUM_ENV_STEPS_SAMPLED_LIFETIME, TIMERS

    setup_start = time.perf_counter()
    config = build_config(args)
    algo = build_algo(config, args.num_env_runners)
    setup_time = time.perf_counter() - setup_start

    sample_timer = CallTimer(ppo_module, 'synchronous_parallel_sample')
    learn_timer = CallTimer(algo.learner_group, 'update')
    sync_timer = CallTimer(algo.env_runner_group, 'sync_weights')

    eval_envs = [gym.make(ENV_ID) for _ in range(args.eval_envs or args.eval_episodes)]
    for i, env in enumerate(eval_envs):
        env.reset(seed=args.seed + EVAL_SEED_OFFSET + i)

    log = EvalLog(args.out)
    env_step, train_iter, iterations, eval_time = 0, 0, 0, 0.0
    rollout_steps: list[int] = []
    last_result: dict = {}
    start = time.perf_counter()

    def run_eval() -> None:
        nonlocal eval_time
        t0 = time.perf_counter()
        returns, lengths = evaluate(algo.get_module(), eval_envs, args.eval_episodes)
        log.write(env_step, train_iter, time.perf_counter() - start, float(returns.mean()),
                  float(returns.std()), float(lengths.mean()))
        eval_time += time.perf_counter() - t0

    run_eval()
    last_eval_step = env_step
    while env_step < args.max_env_step:
        last_result = algo.train()
        iterations += 1
        sampled = int(last_result[ENV_RUNNER_RESULTS][NUM_ENV_STEPS_SAMPLED_LIFETIME])
        rollout_steps.append(sampled - env_step)
        train_iter += math.ceil(EPOCHS * (sampled - env_step) / MINIBATCH)  # RLlib cycles fixed-size minibatches
        env_step = sampled
        if env_step - last_eval_step >= args.eval_every:
            run_eval()
            last_eval_step = env_step
    if last_eval_step != env_step:
        run_eval()
    wall_time = time.perf_counter() - start
    log.close()

    write_summary(args.out, env_step, train_iter, wall_time)
    train_time = wall_time - eval_time
    summary = json.loads((args.out / 'summary.json').read_text())
    summary.update(
        iterations=iterations, setup_time=round(setup_time, 3), eval_time=round(eval_time, 3),
        train_time=round(train_time, 3), sample_time=round(sample_timer.total, 3),
        learn_time=round(learn_timer.total, 3), sync_weights_time=round(sync_timer.total, 3),
        train_env_steps_per_s=round(env_step / train_time, 2),
        sample_env_steps_per_s=round(env_step / sample_timer.total, 2) if sample_timer.total else None,
        rollout_steps_min=min(rollout_steps, default=0), rollout_steps_max=max(rollout_steps, default=0),
        num_env_runners=args.num_env_runners, envs_per_runner=args.envs_per_runner,
        rllib_timers_last={k: round(v, 4) for k, v in last_result.get(TIMERS, {}).items()
                           if isinstance(v, (int, float))},
    )
    (args.out / 'summary.json').write_text(json.dumps(summary, indent=2) + '\n')

    settings = dict(train_batch_size=TRAIN_BATCH, minibatch_size=MINIBATCH, num_epochs=EPOCHS, lr=LR, gamma=GAMMA,
                    lambda_=GAE_LAMBDA, clip_param=CLIP, entropy_coeff=ENTROPY_COEF, vf_loss_coeff=VALUE_COEF,
                    grad_clip=GRAD_CLIP, grad_clip_by='global_norm', use_kl_loss=USE_KL_LOSS,
                    vf_clip_param=str(VF_CLIP), fcnet_hiddens=HIDDEN, fcnet_activation=ACTIVATION,
                    vf_share_layers=VF_SHARE_LAYERS, rollout_fragment_length_per_env_runner=config.get_rollout_fragment_length(worker_index=1),
                    advantage_normalization='over the whole train batch (RLlib GAE connector)')
    info = {'library': 'rllib', 'algorithm': 'PPO', 'env_id': ENV_ID, 'seed': args.seed, 'threads': args.threads,
            'num_env_runners': args.num_env_runners, 'envs_per_runner': args.envs_per_runner,
            'eval_every': args.eval_every, 'eval_episodes': args.eval_episodes, 'eval_envs': len(eval_envs),
            'settings': settings,
            'versions': {name: importlib.metadata.version(name)
                         for name in ('ray', 'torch', 'gymnasium', 'numpy', 'box2d')}}
    (args.out / 'run_info.json').write_text(json.dumps(info, indent=2) + '\n')
    algo.stop()
    ray.shutdown()
    print(json.dumps(summary))


if __name__ == '__main__':
    main()
