"""Where a seed group's time goes: `tidal train CONFIG --seeds N --processes 1` under cProfile, one torch thread
(one share, as each of a group's processes trains it).

Shares of the profiled wall clock: evaluation, collection and stacked updates (the group's three phases), and
within the first two the env stepping (the env managers' `step`) and the acting forwards; the rest is start-up
(imports, building the seeds) and bookkeeping (logs, checkpoints, plots). cProfile slows Python-heavy parts
more than tensor kernels, so its shares are a map of the run, not its speed; `--py-spy` samples the run instead
(`py-spy record`, 50 samples a second, in the benchmark's own environment: `pip install py-spy`), whose shares of
the main thread's samples are the run's own.

    python benchmarks/seed_group_profile.py [--config cartpole_ppo] [--seeds 8] [--steps 20480] [--py-spy]
"""
import argparse
import cProfile
import collections
import json
import pstats
import subprocess
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


#: py-spy's frames ('function (path:line)') of each phase, the first that a sample's stack holds counting it
SAMPLED_PHASES = {
    'stacked updates': '_update (tidal/entry/seed_group.py', 'evaluation': '_evaluate_together (tidal/entry/seed_group.py',
    'collection': '_collect_together (tidal/entry/seed_group.py', 'building the seeds': 'from_folders (',
    'imports': '_find_and_load'}
SAMPLED_PARTS = {  # across phases
    'vmapped loss and backward': '_gradient (tidal/worker/seed_stack.py', 'Adam step': 'step (tidal/worker/seed_stack.py',
    'env stepping (collection and evaluation)': 'step (tidal/envs/env_manager.py',
    'acting forwards': 'act (tidal/worker/seed_acting.py', 'torch._dynamo import': 'torch/_dynamo/__init__.py'}
MAIN_THREAD = '<module> (tidal/__main__.py'  # a frame of every sample of the main thread


def sampled_shares(command: list[str], raw: Path) -> tuple[int, dict[str, float]]:
    """Shares of the main thread's py-spy samples of `tidal COMMAND` by phase (the rest: bookkeeping) and part."""
    subprocess.run(['py-spy', 'record', '-r', '50', '-f', 'raw', '-o', str(raw), '--', sys.executable, '-m',
                    'tidal', *command], check=True)
    phases: collections.Counter = collections.Counter()
    parts: collections.Counter = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(' ')
        if MAIN_THREAD not in stack:
            continue
        samples = int(count)
        total += samples
        phase = next((name for name, frame in SAMPLED_PHASES.items() if frame in stack), 'bookkeeping and the rest')
        phases[phase] += samples
        for name, frame in SAMPLED_PARTS.items():
            if frame in stack:
                parts[name] += samples
    return total, {name: count / total for name, count in (phases + parts).items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--config', default='cartpole_ppo')
    parser.add_argument('--seeds', type=int, default=8)
    parser.add_argument('--steps', type=int, default=20480)
    parser.add_argument('--out', type=Path, default=OUT)
    parser.add_argument('--py-spy', action='store_true', help='sample the run with py-spy rather than cProfile')
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        command = ['train', args.config, '--seeds', str(args.seeds), '--max-env-step', str(args.steps),
                   '--exp-name', str(Path(scratch) / 'group'), '--no-progress', '--set', 'env.stop_value=1000000',
                   '--set', 'torch_threads=1', '--processes', '1']  # one share, in this profiled process
        if args.py_spy:
            samples, shares = sampled_shares(command, Path(scratch) / 'raw.txt')
            result = {'config': args.config, 'seeds': args.seeds, 'steps': args.steps, 'sampler': 'py-spy',
                      'main_thread_samples': samples, 'shares': shares}
            (args.out / f'{args.config}_{args.seeds}_py-spy.json').write_text(json.dumps(result, indent=2) + '\n')
            print(f'{args.config}, {args.seeds} seeds x {args.steps} env steps: {samples} samples of the main thread')
            for label, share in shares.items():
                print(f'  {label}: {100 * share:.0f}%')
            return
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
