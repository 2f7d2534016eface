"""Where tidal SAC's time goes: cProfile over a short Pendulum run, summarised by phase.

    python benchmarks/profile_sac.py [--steps 2100] [--set KEY=VALUE]...

Prints the share of wall time spent in collection, replay sampling and each part of the update.
"""
import argparse
import cProfile
import os
import pstats
import sys
import tempfile
from pathlib import Path

import torch

from tidal import serial_pipeline

# (label, file suffix, function name) of the functions whose cumulative time makes up each phase
PHASES = [
    ('whole training loop', 'entry/serial_pipeline.py', 'train'),
    ('  collect (policy forward + env step + transition)', 'worker/collector.py', 'collect'),
    ('  replay sampling', 'entry/serial_pipeline.py', '_sample_batch'),
    ('  learn step', 'worker/learner.py', 'train'),
    ('    backward passes', 'torch/_tensor.py', 'backward'),
    ('    optimizer steps', 'torch/optim/optimizer.py', 'wrapper'),
    ('    target network update', 'models/target.py', 'update'),
    ('  evaluation', 'worker/evaluator.py', 'eval'),
]
COMPARISON = ['policy.random_collect_size=100', 'policy.learn.batch_size=256',
              'policy.model.actor_hidden_sizes=[256,256]', 'policy.model.critic_hidden_sizes=[256,256]',
              'env.stop_value=null', 'policy.eval.evaluator.eval_freq=1000', 'env.n_evaluator_episode=5',
              'env.evaluator_env_num=1']


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--steps', type=int, default=2100)
    parser.add_argument('--set', dest='overrides', action='append', default=[], metavar='KEY=VALUE')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        profiler = cProfile.Profile()
        profiler.enable()
        serial_pipeline('pendulum_sac', max_env_step=args.steps, progress=False,
                        overrides=[*COMPARISON, *args.overrides, f'exp_name={Path(tmp) / "run"}'])
        profiler.disable()
    stats = pstats.Stats(profiler).stats
    cumulative = {}
    for (filename, _, name), (_, _, _, cum, _) in stats.items():
        for label, suffix, function in PHASES:
            if name == function and filename.replace(os.sep, '/').endswith(suffix):
                cumulative[label] = cumulative.get(label, 0.0) + cum
    total = cumulative[PHASES[0][0]]
    print(f'torch {torch.__version__}, {torch.get_num_threads()} thread(s), {args.steps} env steps, '
          f'overrides: {" ".join(args.overrides) or "none"}')
    for label, _, _ in PHASES:
        seconds = cumulative.get(label, 0.0)
        print(f'{label:<55} {seconds:7.2f} s  {100 * seconds / total:5.1f} %')
    sys.stdout.flush()


if __name__ == '__main__':
    main()
