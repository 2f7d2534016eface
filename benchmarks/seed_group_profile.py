"""Where a seed group's time goes: `tidal train CONFIG --seeds N --processes 1` under cProfile, one torch thread
(one share, as each of a group's processes trains it).

Shares of the profiled wall clock: evaluation, collection and stacked updates (the group's three phases), and
within the first two the env stepping (the env managers' `step`) and the acting forwards; the rest is start-up
(imports, building the seeds) and bookkeeping (logs, checkpoints, plots). cProfile slows Python-heavy parts
more than tensor kernels, so the shares are a map of the run, not its speed.

    python benchmarks/seed_group_profile.py [--config cartpole_ppo] [--seeds 8] [--steps 20480]
"""
import argparse
import cProfile
import json
import pstats
import sys
import tempfile
from pathlib import Path

import torch

from tidal.entry.cli import main as tidal_main

OUT = Path(__file__).resolve().parent / 'results' / 'seed_group_profile'

# (label, function-name suffixes whose cumulative times add up to it; nested calls are not counted twice)
PHASES = {
    'evaluation': ['seed_group.py:_evaluate_together', 'run.py:_evaluate'],
    'collection': ['seed_group.py:_collect_together', 'collector.py:collect'],
    'stacked updates': ['seed_group.py:_update'],
    'env stepping (collection and evaluation)': ['env_manager.py:step'],
    'acting forwards': ['seed_acting.py:act', 'modes.py:forward', 'ppo.py:_forward_collect', 'sac.py:_forward_collect'],
}


def cumulative(stats: pstats.Stats, suffixes: list[str]) -> float:
    """The largest cumulative time among the functions of each suffix, summed over suffixes (a phase's entry
    points do not call each other)."""
    total = 0.0
    for suffix in suffixes:
        file_part, name = suffix.split(':')
        times = [entry[3] for (path, _, function), entry in stats.stats.items()  # type: ignore[attr-defined]
                 if path.endswith(file_part) and function == name]
        total += max(times, default=0.0)
    return total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default='cartpole_ppo')
    parser.add_argument('--seeds', type=int, default=8)
    parser.add_argument('--steps', type=int, default=20480)
    parser.add_argument('--out', type=Path, default=OUT)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        command = ['train', args.config, '--seeds', str(args.seeds), '--max-env-step', str(args.steps),
                   '--exp-name', str(Path(scratch) / 'group'), '--no-progress', '--set', 'env.stop_value=1000000',
                   '--set', 'torch_threads=1', '--processes', '1']  # one share, in this profiled process
        profiler = cProfile.Profile()
        profiler.enable()
        tidal_main(command)
        profiler.disable()
    stats = pstats.Stats(profiler)
    total = stats.total_tt  # type: ignore[attr-defined]
    shares = {label: cumulative(stats, suffixes) / total for label, suffixes in PHASES.items()}
    phases = sum(shares[label] for label in ('evaluation', 'collection', 'stacked updates'))
    shares['start-up and bookkeeping'] = 1.0 - phases
    result = {'config': args.config, 'seeds': args.seeds, 'steps': args.steps, 'profiled_s': total, 'shares': shares}
    name = f'{args.config}_{args.seeds}.json'
    (args.out / name).write_text(json.dumps(result, indent=2) + '\n')
    print(f'{args.config}, {args.seeds} seeds x {args.steps} env steps: {total:.1f} s profiled')
    for label, share in shares.items():
        print(f'  {label}: {100 * share:.0f}%')


if __name__ == '__main__':
    sys.exit(main())
