"""tidal PPO on an Atari game (Breakout by default) for as many env steps as fit, beside the published curve.

Runs `tidal train <game>_ppo` (CleanRL's and the SB3 zoo's Atari PPO settings) for each seed, two seeds
at a time, one per core, then tabulates the evaluation score (whole games, unclipped) at milestones with
the SB3 zoo's published run at the same env step (`published.py`) and the env steps/s of the whole run.

    python benchmarks/ppo_atari.py [--game Breakout] [--seeds 0 1] [--steps 600000] [--quick] [--report-only]
"""
import argparse
import json
import sys
from pathlib import Path

from common import BENCH_DIR, Job, display_path, read_run, run_lanes, shown_command, tidal_train_command
from published import PUBLISHED_FINAL, SB3_ZOO_PPO_ATARI, SB3_ZOO_SOURCE, published_at
from report import fmt_steps, library_row, markdown_table, milestones, plot_curves
from sac_pendulum import versions

EVAL_EVERY_ROLLOUTS = 25  # one rollout is 1024 env steps and 16 minibatch updates
EVAL_GAMES = 4
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 4096


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--game', default='Breakout', choices=sorted(SB3_ZOO_PPO_ATARI))
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--steps', type=int, default=600_000, help='env (agent) steps per run; 4 frames each')
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None)
    parser.add_argument('--quick', action='store_true', help=f'smoke test: {QUICK_STEPS} steps, first seed only')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    args = parser.parse_args(argv)
    if args.quick:
        args.steps, args.seeds = QUICK_STEPS, args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / (f'ppo_{args.game.lower()}' + ('_quick' if args.quick else ''))
    return args


def seed_job(args: argparse.Namespace, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'tidal_seed{seed}'
    eval_freq = 16 if args.quick else EVAL_EVERY_ROLLOUTS * 16  # 16 updates per rollout
    # sampled actions, as in the published curves (training episodes); a greedy policy that never presses
    # FIRE after a lost life stalls Breakout until ALE's 108k-frame limit
    overrides = ['env.stop_value=null', f'env.n_evaluator_episode={EVAL_GAMES}', f'env.evaluator_env_num={EVAL_GAMES}',
                 f'policy.eval.evaluator.eval_freq={eval_freq}', 'policy.eval.deterministic=false']
    return Job(f'tidal seed {seed}', tidal_train_command(f'{args.game.lower()}_ppo', seed, args.steps, run_dir,
                                                         overrides), run_dir)


def build_report(args: argparse.Namespace, jobs: list[Job]) -> str:
    runs = [read_run(job.run_dir) for job in jobs]
    marks = milestones(args.steps)
    published = SB3_ZOO_PPO_ATARI[args.game]
    row = library_row(runs, marks)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({'tidal': runs}, args.out / 'curves.png',
                f'PPO on {args.game} (whole games, unclipped): {len(runs)} seed(s), median, min-max band',
                ylabel='eval game score', published={SB3_ZOO_SOURCE: published})
    reference = {mark: published_at(published, mark) for mark in marks}
    speeds = [run['summary']['env_steps_per_s'] for run in runs]
    results = {'benchmark': f'ppo_{args.game.lower()}', 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'table': row, 'published': reference,
               'published_source': SB3_ZOO_SOURCE, 'published_final': PUBLISHED_FINAL['ppo_atari'][args.game],
               'versions': versions([])['tidal'], 'commands': [shown_command(job.cmd, args.threads) for job in jobs],
               'runs': {seed: run for seed, run in zip(args.seeds, runs)}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    ref_cells = ['n/a' if ref is None else f'{ref[1]:.1f}' + ('' if ref[0] == mark else f' (at {fmt_steps(ref[0])})')
                 for mark, ref in reference.items()]
    finals = '; '.join(f'{name}: {value}' for name, value in PUBLISHED_FINAL['ppo_atari'][args.game].items())
    text = '\n'.join([
        f'# PPO on {args.game} (NoFrameskip-v4): tidal and the published curve', '',
        f'{args.steps} env steps ({4 * args.steps} frames) per seed, seeds {args.seeds}, {PARALLEL_RUNS} runs at a '
        f'time, one per core, {args.threads} torch thread(s) each. Evaluation: {EVAL_GAMES} whole games '
        f'(all lives, unclipped score, actions sampled from the policy as in the published training episodes) '
        f'every {EVAL_EVERY_ROLLOUTS} rollouts.', '',
        markdown_table({'tidal': row}, marks), '',
        '| published | ' + ' | '.join(fmt_steps(m) for m in marks) + ' |', '|---|' + '---|' * len(marks),
        f'| {SB3_ZOO_SOURCE} | ' + ' | '.join(ref_cells) + ' |', '',
        f'Env steps/s of the whole run (collection, learning and evaluation), per seed: '
        + ', '.join(f'{s:.0f}' for s in speeds) + '.', '',
        f'Published at 10M env steps: {finals}.', '', 'Repeat a run from the repo root with:', '', '```',
        shown_command(jobs[0].cmd, args.threads), '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    jobs = [seed_job(args, seed) for seed in args.seeds]
    if not args.report_only:
        print(f'\n== PPO on {args.game}, {args.steps} env steps, seeds {args.seeds}', flush=True)
        for job in jobs:
            print(f'$ {shown_command(job.cmd, args.threads)}', flush=True)
        lanes = [jobs[i::PARALLEL_RUNS] for i in range(min(PARALLEL_RUNS, len(jobs)))]
        run_lanes(lanes, args.threads)
    print('\n' + build_report(args, jobs))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
