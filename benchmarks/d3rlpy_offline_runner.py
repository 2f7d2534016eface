"""d3rlpy 2.8's offline algorithms with the hyperparameters tidal's policies default to, for `offline_hopper.py`.

Runs inside the d3rlpy virtual environment (`benchmarks/.venv-d3rlpy`), never in tidal's. It reads the dataset
`offline_hopper.py` exported from the Minari dataset tidal learns from (observations, actions, rewards, terminals,
timeouts as numpy arrays), learns for `--steps` gradient steps and evaluates the deterministic policy on a separate
env before learning and every `--eval-every` steps, writing the run folder `tidal train` writes (`evals.csv` with
the gradient step as its step, `summary.json`). The wall time starts once the dataset is read and the networks are
built, and counts the evaluations, as tidal's run clock does.
"""
import argparse
import time
from pathlib import Path

import d3rlpy
import gymnasium as gym
import numpy as np
import torch
from d3rlpy.algos.qlearning.base import build_scalers_with_transition_picker
from d3rlpy.logging import NoopAdapterFactory
from d3rlpy.models.encoders import VectorEncoderFactory
from d3rlpy.preprocessing import StandardObservationScaler

from common import EvalLog, write_summary


def algorithm(name: str, obs_scaling: bool) -> d3rlpy.base.LearnableBase:
    """d3rlpy's algorithm `name`, configured as tidal's policy of that name defaults."""
    scaler = StandardObservationScaler() if obs_scaling else None
    two = VectorEncoderFactory([256, 256])
    if name == 'td3_bc':
        return d3rlpy.algos.TD3PlusBCConfig(
            actor_learning_rate=3e-4, critic_learning_rate=3e-4, batch_size=256, gamma=0.99, tau=0.005,
            target_smoothing_sigma=0.2, target_smoothing_clip=0.5, alpha=2.5, update_actor_interval=2,
            actor_encoder_factory=two, critic_encoder_factory=two, observation_scaler=scaler).create(device='cpu:0')
    if name == 'iql':
        return d3rlpy.algos.IQLConfig(
            actor_learning_rate=3e-4, critic_learning_rate=3e-4, batch_size=256, gamma=0.99, tau=0.005, expectile=0.7,
            weight_temp=3.0, max_weight=100.0, actor_encoder_factory=two, critic_encoder_factory=two,
            value_encoder_factory=two, observation_scaler=scaler).create(device='cpu:0')
    if name == 'cql':  # alpha' fixed at 5 (no Lagrangian), SAC's temperature from 1, no entropy in the target
        return d3rlpy.algos.CQLConfig(
            actor_learning_rate=1e-4, critic_learning_rate=3e-4, temp_learning_rate=1e-4, alpha_learning_rate=0.0,
            initial_alpha=1.0, initial_temperature=1.0, conservative_weight=5.0, n_action_samples=10,
            soft_q_backup=False, batch_size=256, gamma=0.99, tau=0.005, actor_encoder_factory=two,
            critic_encoder_factory=two, observation_scaler=scaler).create(device='cpu:0')
    if name == 'bc':
        return d3rlpy.algos.BCConfig(learning_rate=3e-4, batch_size=256, policy_type='deterministic',
                                     encoder_factory=two, observation_scaler=scaler).create(device='cpu:0')
    if name == 'rebrac':
        three = VectorEncoderFactory([256, 256, 256])
        return d3rlpy.algos.ReBRACConfig(
            actor_learning_rate=1e-3, critic_learning_rate=1e-3, batch_size=1024, gamma=0.99, tau=0.005,
            actor_beta=1.0, critic_beta=1.0, update_actor_interval=2, actor_encoder_factory=three,
            critic_encoder_factory=VectorEncoderFactory([256, 256, 256], use_layer_norm=True),
            observation_scaler=scaler).create(device='cpu:0')
    raise SystemExit(f'unknown algorithm {name}')


def evaluate(algo: d3rlpy.base.LearnableBase, env: gym.Env, episodes: int, seed: int) -> tuple[float, float, float]:
    """(mean return, its std, mean length) of the deterministic policy over `episodes` episodes."""
    returns, lengths = [], []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, total, length = False, 0.0, 0
        while not done:
            action = algo.predict(np.asarray(obs, np.float32)[None])[0]
            obs, reward, terminated, truncated, _ = env.step(action)
            total, length, done = total + float(reward), length + 1, terminated or truncated
        returns.append(total)
        lengths.append(length)
    return float(np.mean(returns)), float(np.std(returns)), float(np.mean(lengths))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--algo', required=True)
    parser.add_argument('--data', type=Path, required=True, help='the exported dataset (.npz)')
    parser.add_argument('--env-id', default='Hopper-v5')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--steps', type=int, required=True)
    parser.add_argument('--eval-every', type=int, required=True)
    parser.add_argument('--eval-episodes', type=int, default=5)
    parser.add_argument('--no-obs-scaling', action='store_true')
    parser.add_argument('--run-dir', type=Path, required=True)
    parser.add_argument('--threads', type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    d3rlpy.seed(args.seed)
    data = np.load(args.data)
    dataset = d3rlpy.dataset.MDPDataset(data['observations'], data['actions'], data['rewards'], data['terminals'],
                                        data['timeouts'])
    algo = algorithm(args.algo, not args.no_obs_scaling)
    build_scalers_with_transition_picker(algo, dataset)
    algo.build_with_dataset(dataset)
    env = gym.make(args.env_id)
    # the clock starts once the dataset is read and the networks built, as tidal's run clock does
    start = time.monotonic()
    log = EvalLog(args.run_dir)
    eval_seed = 10_000 + 1000 * args.seed
    log.write(0, 0, time.monotonic() - start, *evaluate(algo, env, args.eval_episodes, eval_seed))
    fitter = algo.fitter(dataset, n_steps=args.steps, n_steps_per_epoch=args.eval_every, show_progress=False,
                         logger_adapter=NoopAdapterFactory(), save_interval=10**9)
    for epoch, _ in fitter:
        step = epoch * args.eval_every
        log.write(step, step, time.monotonic() - start, *evaluate(algo, env, args.eval_episodes, eval_seed))
    log.close()
    write_summary(args.run_dir, args.steps, args.steps, time.monotonic() - start)


if __name__ == '__main__':
    main()
