"""Side-by-side benchmark of tidal's CrossQ against Stable-Baselines3-contrib's CrossQ on Pendulum-v1 and Hopper-v5.

The RL Zoo's CrossQ settings on both sides (tidal's `pendulum_crossq` and `hopper_crossq` zoo configs): lr 1e-3,
Adam betas (0.5, 0.999), batch 256, [256, 256] actor, batch renormalisation (momentum 0.01, eps 0.001, 100k
warm-up passes) before every linear layer, automatic entropy from 1, one update per env step; Pendulum: actor
every 2nd critic step, 100 random steps; Hopper: every 3rd, 5000 random steps. The critics' width is the one
setting changed from the Zoo's (Pendulum [256, 256] as the Zoo; Hopper's [2048, 2048] becomes --hopper-critic-width
on both sides, so that a run fits a CPU). For each seed tidal and sb3-contrib start together, one per core.

    python benchmarks/crossq.py [--envs pendulum hopper] [--seeds 0 1 2] [--quick] [--report-only]
"""
import argparse
import json
import statistics
import sys
from pathlib import Path

from common import (BENCH_DIR, SB3_VENV, Job, benchmark_args, benchmark_parser, display_path, ensure_sb3_venv,
                    merge_overrides, read_run, run_batch, shown_command, tidal_train_command, venv_python)
from report import library_row, markdown_table, milestones, plot_curves
from sac_pendulum import versions

LIBRARIES = {'tidal': 'tidal', 'sb3': 'sb3-contrib'}
# per env: gymnasium id, tidal zoo config, env steps (budgets that fit a 2-core machine: 3 seeds of both envs on both
# sides in about 80 minutes), random steps first, actor every n-th critic step, env steps (tidal: train
# iterations) between evaluations
ENVS = {
    'pendulum': dict(env_id='Pendulum-v1', config='pendulum_crossq', steps=10_000, warmup=100, delay=2,
                     eval_every=1000),
    'hopper': dict(env_id='Hopper-v5', config='hopper_crossq', steps=30_000, warmup=5000, delay=3,
                   eval_every=5000),
}
EVAL_EPISODES = 5
QUICK_STEPS = 1500  # past the random steps


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, None, QUICK_STEPS, threads=True, sets=True)
    parser.add_argument('--envs', nargs='+', choices=sorted(ENVS), default=['pendulum', 'hopper'])
    parser.add_argument('--hopper-critic-width', type=int, default=256,
                        help="units of each critic layer on Hopper, both sides (the Zoo's: 2048)")
    return benchmark_args(parser, argv, 'crossq')


def env_steps(args: argparse.Namespace, env: str) -> int:
    """The run's env steps: --steps, else the env's own; --quick: its random steps and QUICK_STEPS more."""
    spec = ENVS[env]
    if args.quick:
        return spec['warmup'] + QUICK_STEPS
    return args.steps or spec['steps']


def critic_width(args: argparse.Namespace, env: str) -> int:
    return args.hopper_critic_width if env == 'hopper' else 256


def seed_jobs(args: argparse.Namespace, env: str, seed: int, sb3_python: Path) -> dict[str, Job]:
    """The tidal and sb3-contrib runs of one seed on `env`, keyed by library."""
    spec, runs = ENVS[env], args.out / env / 'runs'
    steps, width = env_steps(args, env), critic_width(args, env)
    tidal_dir, sb3_dir = runs / f'tidal_seed{seed}', runs / f'sb3_seed{seed}'
    overrides = merge_overrides([f'policy.model.critic_hidden_sizes=[{width},{width}]',
                                 f'policy.eval.evaluator.eval_freq={spec["eval_every"]}',
                                 f'env.n_evaluator_episode={EVAL_EPISODES}',
                                 'env.stop_value=null'],  # the whole budget: the zoo configs stop at their stop value
                                args.extra_sets)
    sb3_cmd = [str(sb3_python), display_path(BENCH_DIR / 'sb3_crossq_runner.py'), '--env-id', spec['env_id'],
               '--learning-starts', str(spec['warmup']), '--policy-delay', str(spec['delay']),
               '--critic-width', str(width), '--seed', str(seed), '--steps', str(steps),
               '--run-dir', display_path(sb3_dir), '--eval-every', str(spec['eval_every']),
               '--eval-episodes', str(EVAL_EPISODES), '--threads', str(args.threads)]
    return {'tidal': Job(f'tidal {env} seed {seed}', tidal_train_command(spec['config'], seed, steps, tidal_dir,
                                                                         overrides), tidal_dir),
            'sb3': Job(f'sb3-contrib {env} seed {seed}', sb3_cmd, sb3_dir)}


def env_report(args: argparse.Namespace, env: str, jobs: dict[int, dict[str, Job]]) -> str:
    """Reads one env's run folders, writes its results.json, curves.png and table.md; returns the table text."""
    spec, out = ENVS[env], args.out / env
    steps = env_steps(args, env)
    runs = {lib: [read_run(jobs[seed][lib].run_dir) for seed in args.seeds] for lib in LIBRARIES}
    marks = milestones(steps)
    rows = {LIBRARIES[lib]: library_row(runs[lib], marks) for lib in LIBRARIES}
    ratios = {seed: t['summary']['wall_time'] / s['summary']['wall_time']
              for seed, t, s in zip(args.seeds, runs['tidal'], runs['sb3'])}
    ratio = statistics.median(ratios.values())
    commands = {lib: {seed: shown_command(jobs[seed][lib].cmd, args.threads) for seed in args.seeds}
                for lib in LIBRARIES}
    vers = versions([jobs[seed]['sb3'].run_dir for seed in args.seeds])
    width = critic_width(args, env)
    plot_curves({LIBRARIES[lib]: runs[lib] for lib in LIBRARIES}, out / 'curves.png',
                f'CrossQ on {spec["env_id"]}, {len(args.seeds)} seed(s): median, min-max band')
    results = {'benchmark': 'crossq', 'env_id': spec['env_id'], 'steps': steps, 'seeds': args.seeds,
               'threads': args.threads, 'critic_width': width, 'milestones': marks, 'versions': vers,
               'commands': commands, 'table': rows,
               'wall_clock_ratio_tidal_over_sb3_contrib': {'median': ratio, 'per_seed': ratios},
               'runs': {lib: {seed: run for seed, run in zip(args.seeds, runs[lib])} for lib in LIBRARIES}}
    (out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    per_seed = ', '.join(f'seed {seed}: {r:.2f}' for seed, r in ratios.items())
    text = '\n'.join([
        f'# CrossQ on {spec["env_id"]}: tidal vs sb3-contrib', '',
        f'{steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run; the two libraries trained '
        f'at the same time, one per core. Both sides: the RL Zoo\'s CrossQ settings, critics [{width}, {width}], '
        f'actor every {spec["delay"]} critic steps, {spec["warmup"]} random steps first; {EVAL_EPISODES} '
        'deterministic evaluation episodes.', '',
        markdown_table(rows, marks), '',
        f'tidal/sb3-contrib wall-clock ratio (per seed pair, then median): **{ratio:.2f}** ({per_seed}).', '',
        f"Versions: tidal {vers['tidal'].get('tidal')}, torch {vers['tidal'].get('torch')}; "
        f"sb3-contrib {vers['sb3'].get('sb3-contrib')}, stable-baselines3 {vers['sb3'].get('stable-baselines3')}, "
        f"torch {vers['sb3'].get('torch')}; gymnasium {vers['tidal'].get('gymnasium')}.", '',
        f'sb3-contrib evaluates every {spec["eval_every"]} env steps; tidal every {spec["eval_every"]} train '
        f'iterations, which start after the {spec["warmup"]} random steps.', '',
        'Repeat a tidal run from the repo root with:', '', '```', commands['tidal'][args.seeds[0]], '```', ''])
    (out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sb3_python = venv_python(SB3_VENV) if args.report_only else ensure_sb3_venv()
    for env in args.envs:
        jobs = {seed: seed_jobs(args, env, seed, sb3_python) for seed in args.seeds}
        if not args.report_only:
            for seed in args.seeds:
                run_batch(f'{env} seed {seed}: tidal and sb3-contrib side by side', list(jobs[seed].values()),
                          args.threads)
        print('\n' + env_report(args, env, jobs))
    print(f'outputs in {display_path(args.out)}: <env>/results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
