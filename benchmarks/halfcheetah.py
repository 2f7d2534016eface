"""tidal SAC and TAAC on HalfCheetah-v5 (MuJoCo), beside the SB3 zoo's published SAC curve.

The zoo configs `halfcheetah_sac` (SB3 zoo's settings) and `halfcheetah_taac` (the TAAC paper's protocol):
one env, one update per env step, [256, 256] networks, 256 transitions per update, lr 3e-4, 10k random
warm-up steps; 5 evaluation episodes every 5000 train iterations (TAAC epsilon-greedy 0.1, SAC greedy). With
--alf the two arms are `halfcheetah_sac_alf` and `halfcheetah_taac_alf` instead: the same, under ALF's TAAC
settings for both (target entropy -1.61 per action dimension, temperatures from 1, rewards normalised, clip 1).
Two lanes of runs, one per core, so the machine always runs two at a time: a TAAC run costs about twice a
SAC run, and the lanes are packed to end together (TAAC seeds 0, 1 then SAC seed 2 beside SAC seeds 0, 1
then TAAC seed 2). Every run shares the machine with one other run, which is what the wall-clock ratio
compares.

    python benchmarks/halfcheetah.py [--alf] [--seeds 0 1 2] [--steps 50000] [--quick] [--report-only] [--resume]

--resume keeps the runs that reached --steps, resumes those stopped with a checkpoint (`tidal resume`, exact) and
starts the others, so a benchmark stopped part way ends as the uninterrupted one would.
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from pathlib import Path

from common import (TIDAL_CMD, Job, benchmark_args, benchmark_parser, display_path, read_run, run_lanes, shown_command,
                    tidal_train_command)
from published import PUBLISHED_FINAL, SB3_ZOO_SAC, SB3_ZOO_SOURCE
from report import library_row, markdown_table, milestones, plot_curves
from zoo_curve import FULL_BUDGET, published_table

ENV_ID = 'HalfCheetah-v5'
POLICIES = {'sac': 'SAC', 'taac': 'TAAC'}
QUICK_STEPS = 11_000
ALF_TITLE = ", under ALF's TAAC settings"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 50_000, QUICK_STEPS, threads=True)
    parser.add_argument('--alf', action='store_true',
                        help="the arms under ALF's TAAC settings: zoo configs halfcheetah_sac_alf, halfcheetah_taac_alf")
    parser.add_argument('--resume', action='store_true',
                        help='keep finished runs, resume stopped ones from their checkpoint, start the rest')
    return benchmark_args(parser, argv, lambda args: 'halfcheetah_alf' if args.alf else 'halfcheetah')


def zoo_config(args: argparse.Namespace, policy: str) -> str:
    return f'halfcheetah_{policy}_alf' if args.alf else f'halfcheetah_{policy}'


def job(args: argparse.Namespace, policy: str, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'{policy}_seed{seed}'
    cmd = tidal_train_command(zoo_config(args, policy), seed, args.steps, run_dir, FULL_BUDGET)
    return Job(f'{POLICIES[policy]} seed {seed}', cmd, run_dir)


def finished(run_dir: Path, steps: int) -> bool:
    summary = run_dir / 'summary.json'
    return summary.exists() and json.loads(summary.read_text()).get('env_step', 0) >= steps


def to_run(args: argparse.Namespace, queued: Job) -> Job | None:
    """With --resume: None for a run that reached the budget, `tidal resume` for one with a checkpoint."""
    if not args.resume:
        return queued
    if finished(queued.run_dir, args.steps):
        return None
    if (queued.run_dir / 'ckpt' / 'latest.pt').exists():
        return Job(queued.name, [*TIDAL_CMD, 'resume', display_path(queued.run_dir)], queued.run_dir, resume=True)
    return queued


def lanes(args: argparse.Namespace) -> list[list[Job]]:
    """Two queues of equal expected length: the first seeds' TAAC runs beside their SAC runs, then the
    last seed's two runs swapped so each lane ends with the other policy."""
    *first, last = args.seeds
    if not first:
        queues = [[job(args, 'taac', last)], [job(args, 'sac', last)]]
    else:
        queues = [[job(args, 'taac', seed) for seed in first] + [job(args, 'sac', last)],
                  [job(args, 'sac', seed) for seed in first] + [job(args, 'taac', last)]]
    return [[kept for kept in (to_run(args, queued) for queued in lane) if kept is not None] for lane in queues]


def build_report(args: argparse.Namespace) -> str:
    """Reads every run folder, writes results.json, curves.png and table.md; returns the table text."""
    runs = {p: [read_run(job(args, p, seed).run_dir) for seed in args.seeds] for p in POLICIES}
    marks = milestones(args.steps)
    rows = {POLICIES[p]: library_row(runs[p], marks) for p in POLICIES}
    ratio = statistics.median(r['summary']['wall_time'] for r in runs['taac']) / \
        statistics.median(r['summary']['wall_time'] for r in runs['sac'])
    finals = {p: [run['evals'][-1]['return_mean'] for run in runs[p]] for p in POLICIES}
    commands = {p: [shown_command(job(args, p, seed).cmd, args.threads) for seed in args.seeds] for p in POLICIES}
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium', 'mujoco')}
    published = SB3_ZOO_SAC['HalfCheetah']

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({POLICIES[p]: runs[p] for p in POLICIES}, args.out / 'curves.png',
                f'{ENV_ID}{ALF_TITLE if args.alf else ""}, {len(args.seeds)} seed(s): median, min-max band',
                ylabel='eval return (TAAC: epsilon-greedy 0.1)', published={f'{SB3_ZOO_SOURCE}, SAC': published})
    results = {'benchmark': 'halfcheetah_alf' if args.alf else 'halfcheetah', 'env_id': ENV_ID, 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'versions': vers, 'commands': commands,
               'table': rows, 'final_returns': finals, 'wall_clock_ratio_taac_over_sac': ratio,
               'published': {'label': SB3_ZOO_SOURCE, 'curve': published},
               'runs': {p: dict(zip(args.seeds, runs[p])) for p in POLICIES}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    at_1m = '; '.join(f'{name}: {value}' for name, value in PUBLISHED_FINAL['sac']['HalfCheetah'].items())
    text = '\n'.join([
        f'# SAC and TAAC on {ENV_ID} (tidal{ALF_TITLE if args.alf else ""})', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run, two runs at a time '
        f"(one per core); zoo configs `{zoo_config(args, 'sac')}` and `{zoo_config(args, 'taac')}` as shipped, run "
        'to the end of the budget.', '',
        markdown_table(rows, marks, first_column='policy'), '',
        *published_table(published, f'{SB3_ZOO_SOURCE}, SAC, HalfCheetah-v3', marks),
        f'Published SAC at 1M env steps: {at_1m}.', '',
        'Last evaluation per seed: ' + '; '.join(
            f"{POLICIES[p]} {', '.join(f'{r:.0f}' for r in finals[p])}" for p in POLICIES) + '.', '',
        f'TAAC/SAC wall-clock ratio (medians over seeds): **{ratio:.2f}**.', '',
        'Notes:',
        '- Returns are medians over seeds of the last evaluation at or before each milestone ("at ..." names '
        'the env step when it differs). Evaluations come every 5000 train iterations, which start after the '
        '10k warm-up steps.',
        '- TAAC evaluates epsilon-greedily (0.1), as its paper does; SAC greedily.',
        f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}, "
        f"mujoco {vers['mujoco']}.",
        '', 'Repeat the runs from the repo root with:', '', '```',
        *[c for p in POLICIES for c in commands[p]], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report_only:
        print(f'\n== SAC and TAAC on {ENV_ID}, {args.steps} env steps, two lanes', flush=True)
        for lane in lanes(args):
            for queued in lane:
                print(f'$ {shown_command(queued.cmd, args.threads)}', flush=True)
        run_lanes(lanes(args), args.threads)
    print('\n' + build_report(args))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
