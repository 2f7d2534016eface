"""SQIL-SAC imitating a SAC expert on Pendulum-v1, scored from random actions (0) to the expert (1).

SQIL (Reddy et al. 2019, arXiv 1905.11108) never sees the env's reward: it learns from batches that are
half expert demonstrations rewarded 1 and half its own transitions rewarded 0. The benchmark:

1. the expert: a finished `pendulum_sac` run (`--expert-ckpt`); when that checkpoint does not exist, one
   is trained here first with the settings of the tidal-vs-SB3 comparison (`sac_pendulum.py`);
2. 10 deterministic expert episodes recorded with `tidal collect-demos`; their mean is the expert return;
3. the mean return of 10 episodes of uniform random actions;
4. `pendulum_sqil_sac` with the comparison settings, seeds two at a time, one per core.

Each evaluation is scored (R - R_random) / (R_expert - R_random). Outputs `expert_demos.npz`,
`results.json`, `curves.png` and `table.md` in `benchmarks/results/sqil_pendulum/`.

    python benchmarks/sqil_pendulum.py [--seeds 0 1 2] [--steps 20000] [--expert-ckpt PATH] [--report-only]
"""
import argparse
import importlib.metadata
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from common import (BENCH_DIR, REPO_ROOT, TIDAL_CMD, Job, applicable_overrides, benchmark_args, benchmark_parser,
                    display_path, merge_overrides, read_run, run_batch, shown_command, thread_env, tidal_train_command)
from report import eval_at, fmt_steps, library_row, milestone_cell, milestones, plot_curves
from sac_pendulum import EVAL_EPISODES, TIDAL_OVERRIDES

ENV_ID = 'Pendulum-v1'
EXPERT_CONFIG = 'pendulum_sac'
SQIL_CONFIG = 'pendulum_sqil_sac'
DEFAULT_EXPERT = BENCH_DIR / 'results' / 'sac_speed' / 'runs' / 'tidal_seed0' / 'ckpt' / 'best.pt'
EXPERT_SEED = 0
DEMO_EPISODES = 10
RANDOM_EPISODES = 10
RANDOM_SEED = 0
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 20_000, threads=True, pin=True)  # --steps: also the expert's, when trained
    parser.add_argument('--expert-ckpt', type=Path, default=DEFAULT_EXPERT,
                        help='checkpoint <run>/ckpt/<name>.pt of a finished pendulum_sac run; one is trained '
                             f'into <out>/runs/expert when it is missing (default: {display_path(DEFAULT_EXPERT)})')
    args = benchmark_args(parser, argv, 'sqil_pendulum')
    args.expert_ckpt, args.out = Path(os.path.abspath(args.expert_ckpt)), Path(os.path.abspath(args.out))
    args.demos = args.out / 'expert_demos.npz'
    return args


# ---------------------------------------------------------------- the expert and the two reference returns

def expert_run_dir(ckpt: Path) -> Path:
    """The run folder of `<run>/ckpt/<name>.pt`; refuses one without its config or that has not finished."""
    run_dir = ckpt.parent.parent
    for needed, why in (('config.yaml', 'its config is needed to load it'),
                        ('summary.json', 'the run has not finished')):
        if not (run_dir / needed).exists():
            raise SystemExit(f'error: expert checkpoint {display_path(ckpt)}: '
                             f'{display_path(run_dir / needed)} is missing ({why})')
    return run_dir


def expert_job(args: argparse.Namespace) -> Job:
    """The `pendulum_sac` run trained when no expert checkpoint is given."""
    run_dir = args.out / 'runs' / 'expert'
    overrides, _ = applicable_overrides(EXPERT_CONFIG, TIDAL_OVERRIDES)
    return Job('expert (pendulum_sac)', tidal_train_command(EXPERT_CONFIG, EXPERT_SEED, args.steps, run_dir,
                                                           overrides), run_dir)


def collect_command(ckpt: Path, demos: Path) -> list[str]:
    """`tidal collect-demos` on the expert run's own config, deterministic actions."""
    config = display_path(expert_run_dir(ckpt) / 'config.yaml')
    return [*TIDAL_CMD, 'collect-demos', config, '--ckpt', display_path(ckpt),
            '--episodes', str(DEMO_EPISODES), '-o', display_path(demos)]


def demo_returns(demos: Path) -> tuple[list[float], Path]:
    """Per-episode returns of the demonstrations and the checkpoint they were recorded with.

    The checkpoint is stored as given to `tidal collect-demos`, which runs at the repo root.
    """
    from tidal.worker.demos import load_demos

    if not demos.exists():
        raise SystemExit(f'error: {display_path(demos)} is missing: run without --report-only first')
    metadata = load_demos(demos).metadata
    return [float(r) for r in metadata['returns']], REPO_ROOT / metadata['checkpoint']


def random_policy_returns(episodes: int, seed: int) -> list[float]:
    """Returns of uniform random actions, episode i starting from `reset(seed=seed + i)`."""
    import gymnasium as gym

    env = gym.make(ENV_ID)
    env.action_space.seed(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
    env.close()
    return returns


# ---------------------------------------------------------------- SQIL runs and the report

def sqil_jobs(args: argparse.Namespace) -> dict[int, Job]:
    comparison, _ = applicable_overrides(SQIL_CONFIG, TIDAL_OVERRIDES)
    overrides = merge_overrides(comparison, [f'policy.expert_data_path={display_path(args.demos)}',
                                             'env.stop_value=null'])
    jobs = {}
    for seed in args.seeds:
        run_dir = args.out / 'runs' / f'sqil_seed{seed}'
        jobs[seed] = Job(f'sqil seed {seed}', tidal_train_command(SQIL_CONFIG, seed, args.steps, run_dir, overrides),
                         run_dir)
    return jobs


def batches(seeds: list[int]) -> list[list[int]]:
    return [seeds[i:i + PARALLEL_RUNS] for i in range(0, len(seeds), PARALLEL_RUNS)]


def normalized(run: dict, random_return: float, expert_return: float) -> dict:
    """The run with each evaluation's mean return replaced by its normalized score."""
    span = expert_return - random_return
    evals = [{**row, 'return_mean': (row['return_mean'] - random_return) / span,
              'return_std': row['return_std'] / abs(span)} for row in run['evals']]
    return {'evals': evals, 'summary': run['summary']}


def best_score(run: dict) -> dict:
    best = max(run['evals'], key=lambda row: row['return_mean'])
    return {'score': best['return_mean'], 'env_step': best['env_step']}


def build_report(args: argparse.Namespace, jobs: dict[int, Job], expert_cmd: list[str] | None) -> str:
    """Reads the demonstrations and run folders, writes results.json, curves.png and table.md."""
    expert_returns, expert_ckpt = demo_returns(args.demos)
    random_returns = random_policy_returns(RANDOM_EPISODES, RANDOM_SEED)
    r_expert, r_random = statistics.mean(expert_returns), statistics.mean(random_returns)
    runs = [read_run(jobs[seed].run_dir) for seed in args.seeds]
    scored = [normalized(run, r_random, r_expert) for run in runs]
    marks = milestones(args.steps)
    returns_row, scores_row = library_row(runs, marks), library_row(scored, marks)
    best = {seed: best_score(run) for seed, run in zip(args.seeds, scored)}
    best_median = statistics.median(b['score'] for b in best.values())
    commands = {'expert_train': shown_command(expert_cmd, args.threads) if expert_cmd else None,
                'collect_demos': shown_command(collect_command(expert_ckpt, args.demos), args.threads),
                'sqil': {seed: shown_command(job.cmd, args.threads) for seed, job in jobs.items()}}
    alone = [batch[0] for batch in batches(args.seeds) if len(batch) == 1]
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({'SQIL-SAC': scored}, args.out / 'curves.png',
                f'SQIL-SAC on {ENV_ID}, {len(args.seeds)} seed(s): median, min-max band',
                ylabel='normalized score (0 random, 1 expert)', references={'expert (score 1)': 1.0})
    results = {'benchmark': 'sqil_pendulum', 'env_id': ENV_ID, 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'versions': vers,
               'expert': {'checkpoint': display_path(expert_ckpt), 'return': r_expert,
                          'episode_returns': expert_returns},
               'random': {'return': r_random, 'episode_returns': random_returns, 'seed': RANDOM_SEED},
               'commands': commands, 'returns': returns_row, 'normalized_scores': scores_row,
               'best_normalized_score': {'median': best_median, 'per_seed': best},
               'runs': dict(zip(args.seeds, runs))}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    text = '\n'.join([
        f'# SQIL-SAC on {ENV_ID}: imitating a SAC expert', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run, '
        f'{PARALLEL_RUNS} runs at a time (one per core). `{SQIL_CONFIG}` with the comparison settings: batch 256 '
        '(128 agent + 128 expert transitions), lr 3e-4, [256, 256] networks, 100 random warm-up steps, 1 update '
        f'per env step, automatic entropy, {EVAL_EPISODES} deterministic evaluation episodes. Expert: '
        f'`{display_path(expert_ckpt)}`, {DEMO_EPISODES} deterministic demonstration episodes.', '',
        '| expert return | random return | best normalized score | wall-clock (s) | env steps/s | updates/s |',
        '|---|---|---|---|---|---|',
        f"| {r_expert:.1f} | {r_random:.1f} | {best_median:.2f} | {returns_row['wall_time']:.0f} "
        f"| {returns_row['env_steps_per_s']:.1f} | {returns_row['updates_per_s']:.1f} |", '',
        '| env steps | eval return | normalized score | normalized score, min-max over seeds |',
        '|---|---|---|---|',
        *[f"| {fmt_steps(mark)} | {milestone_cell(returns_row['returns'][mark], mark)} "
          f"| {milestone_cell(scores_row['returns'][mark], mark, digits=2)} | {score_range(scored, mark)} |"
          for mark in marks], '',
        'Notes:',
        f'- Normalized score = (R - R_random) / (R_expert - R_random): R_expert is the mean return of the '
        f'{DEMO_EPISODES} demonstrations, R_random that of {RANDOM_EPISODES} episodes of uniform random actions '
        f'(gymnasium, seeds {RANDOM_SEED}-{RANDOM_SEED + RANDOM_EPISODES - 1}).',
        *([] if r_expert > r_random else
          ['- **The expert does not beat random actions here, so the scores say nothing.**']),
        '- Returns and scores are medians over seeds of the last evaluation at or before each milestone '
        '(evaluations every 1000 train iterations, iteration k being env step k+100: "at ..." names the env '
        'step when it differs); the first evaluation, at env step 100, is of the untrained policy. The best '
        'normalized score is the median over seeds of each seed\'s best evaluation (' + ', '.join(f"seed {seed}: {b['score']:.2f} at {fmt_steps(b['env_step'])}"
                                   for seed, b in best.items()) + ').',
        '- Wall clock runs from the start of training to its end and includes evaluation and the policy-gradient '
        'cosine monitor of the zoo config (two extra partial backward passes per update); median over seeds'
        + (f"; seed {', '.join(map(str, alone))} ran alone" if alone else '') + '.',
        f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.",
        '', 'Commands, from the repo root:', '', '```',
        *([commands['expert_train']] if expert_cmd else []), commands['collect_demos'],
        *commands['sqil'].values(), '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def score_range(scored: list[dict], mark: int) -> str:
    found = [eval_at(run['evals'], mark) for run in scored]
    if any(row is None for row in found):
        return 'n/a'
    values = [row['return_mean'] for row in found]
    return f'{min(values):.2f} to {max(values):.2f}'


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    jobs = sqil_jobs(args)
    expert = expert_job(args)
    if args.report_only:
        _, ckpt = demo_returns(args.demos)
    else:
        ckpt = args.expert_ckpt
        if not ckpt.exists():
            run_batch(f'no expert at {display_path(ckpt)}: training one, {args.steps} env steps', [expert],
                      args.threads, pin=not args.no_pin)
            ckpt = expert.run_dir / 'ckpt' / 'best.pt'
        collect = collect_command(ckpt, args.demos)
        print(f'\n== expert demonstrations\n$ {shown_command(collect, args.threads)}', flush=True)
        if subprocess.run(collect, cwd=REPO_ROOT, env={**os.environ, **thread_env(args.threads)}).returncode:
            raise SystemExit('error: recording the expert demonstrations failed (output above)')
        for batch in batches(args.seeds):
            run_batch(f'SQIL seeds {batch}: {args.steps} env steps', [jobs[seed] for seed in batch], args.threads,
                      pin=not args.no_pin)
    trained_here = Path(os.path.abspath(ckpt)).parent.parent == expert.run_dir
    print('\n' + build_report(args, jobs, expert.cmd if trained_here else None))
    print(f'outputs in {display_path(args.out)}: expert_demos.npz, results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
