"""PPG, on the shared and on the dual (disjoint) architecture, against PPO at equal env steps (tidal only).

Each env runs its zoo configs `<env>_ppo` and `<env>_ppg` (the PPG configs are their PPO config's
policy phase plus an auxiliary phase), PPG once with `policy.model.share_encoder=true` (one encoder,
the value head on detached features) and once with `false` (separate policy and value networks), for
the same env-step budget and with the stop value removed. Runs go two at a time, one per core, in the
order env, seed, variant. Reports the median eval return at env-step milestones, the mean eval return
over the run (area under the curve), env steps to a threshold and wall clock; writes `results.json`,
`curves_<env>.png` and `table.md` in `benchmarks/results/ppg/`.

    python benchmarks/ppg.py [--seeds 0 1 2] [--cartpole-steps 100000] [--lunar-steps 300000] [--minatar]
                             [--variants ppo ppo_shared ppg_shared ppg_dual]

`ppo_shared` is PPO on one encoder that both heads train (its value loss reaches the encoder), the like-for-like
partner of PPG shared, whose value head reads the encoder's features detached in the policy phase.
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

from common import (BENCH_DIR, Job, check_tidal_config, display_path, read_run, run_batch, shown_command,
                    tidal_train_command)
from report import (curve_mean, fmt_steps, iqm_of, library_row, markdown_table, milestones, plot_curves, steps_cell,
                    steps_to_summary)


@dataclass(frozen=True)
class Env:
    env_id: str
    config_prefix: str  # zoo configs <prefix>_ppo and <prefix>_ppg
    threshold: float | None  # a return that counts as solving it, for "env steps to"


ENVS = {'cartpole': Env('CartPole-v1', 'cartpole', 475),
        'lunarlander': Env('LunarLander-v3', 'lunarlander', 200),
        'minatar': Env('MinAtar Breakout', 'minatar_breakout', None)}
# variant: (algorithm, its overrides, label)
VARIANTS = {'ppo': ('ppo', [], 'PPO'),
            'ppo_shared': ('ppo', ['policy.model.share_encoder=true'], 'PPO shared'),
            'ppg_shared': ('ppg', ['policy.model.share_encoder=true'], 'PPG shared'),
            'ppg_dual': ('ppg', ['policy.model.share_encoder=false'], 'PPG dual')}
FULL_BUDGET = ['env.stop_value=null']  # run every step of the budget: the zoo configs stop early
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
PLANNED_RATE = 1500  # env steps/s per process the printed time estimate assumes
QUICK_STEPS = 4096


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--cartpole-steps', type=int, default=100_000)
    parser.add_argument('--lunar-steps', type=int, default=300_000)
    parser.add_argument('--minatar-steps', type=int, default=500_000)
    parser.add_argument('--envs', nargs='+', choices=['cartpole', 'lunarlander'], default=['cartpole', 'lunarlander'])
    parser.add_argument('--minatar', action='store_true',
                        help=f"add the MinAtar Breakout arm ({ENVS['minatar'].config_prefix}_ppo/_ppg; off by default)")
    parser.add_argument('--variants', nargs='+', choices=list(VARIANTS), default=['ppo', 'ppg_shared', 'ppg_dual'])
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None,
                        help='output folder (default: benchmarks/results/ppg, or ..._quick)')
    parser.add_argument('--quick', action='store_true',
                        help=f'smoke test: {QUICK_STEPS} steps per run, first seed only')
    parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    args = parser.parse_args(argv)
    args.variants = [v for v in VARIANTS if v in args.variants]  # the table's order
    if args.minatar:
        args.envs = [*args.envs, 'minatar']
    args.budgets = {'cartpole': args.cartpole_steps, 'lunarlander': args.lunar_steps, 'minatar': args.minatar_steps}
    if args.quick:
        args.budgets = {env: QUICK_STEPS for env in args.budgets}
        args.seeds = args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('ppg_quick' if args.quick else 'ppg')
    return args


def config_of(env: str, variant: str) -> tuple[str, list[str]]:
    algorithm, overrides, _ = VARIANTS[variant]
    return f'{ENVS[env].config_prefix}_{algorithm}', [*FULL_BUDGET, *overrides]


def job(args: argparse.Namespace, env: str, variant: str, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'{env}_{variant}_seed{seed}'
    config, overrides = config_of(env, variant)
    return Job(f'{env} {variant} seed {seed}', tidal_train_command(config, seed, args.budgets[env], run_dir, overrides),
               run_dir)


def plan(args: argparse.Namespace) -> list[list[tuple[str, Job]]]:
    """Every run in the order env, seed, variant, cut into batches of PARALLEL_RUNS; prints the plan and
    its time at PLANNED_RATE env steps/s per process (a batch lasts as long as its longest run)."""
    ordered = [(env, job(args, env, variant, seed)) for env in args.envs for seed in args.seeds for variant in args.variants]
    batches = [ordered[i:i + PARALLEL_RUNS] for i in range(0, len(ordered), PARALLEL_RUNS)]
    total = 0.0
    print(f'plan: {len(ordered)} runs in {len(batches)} batches of up to {PARALLEL_RUNS}, one per core; '
          f'time at {PLANNED_RATE} env steps/s per process:')
    for i, batch in enumerate(batches, 1):
        seconds = max(args.budgets[env] for env, _ in batch) / PLANNED_RATE
        total += seconds
        print(f"  {i:2d}. {' | '.join(item.name for _, item in batch)}  ~{seconds / 60:.1f} min")
    print(f'  total ~{total / 60:.0f} min', flush=True)
    return batches


def env_report(args: argparse.Namespace, env: str) -> tuple[dict, list[str]]:
    """One env's results and its table.md section; writes its curve plot."""
    spec, steps = ENVS[env], args.budgets[env]
    marks = milestones(steps)
    variants = args.variants
    runs = {v: [read_run(job(args, env, v, seed).run_dir) for seed in args.seeds] for v in variants}
    labels = {v: VARIANTS[v][2] for v in variants}
    rows = {labels[v]: library_row(runs[v], marks) for v in variants}
    means = {v: [curve_mean(run['evals'], steps) for run in runs[v]] for v in variants}
    finals = {v: [run['evals'][-1]['return_mean'] for run in runs[v]] for v in variants}
    reached = {v: steps_to_summary(runs[v], spec.threshold) for v in variants} if spec.threshold is not None else None
    references = {f'threshold ({spec.threshold:g})': spec.threshold} if spec.threshold is not None else None
    plot_curves({labels[v]: runs[v] for v in variants}, args.out / f'curves_{env}.png',
                f'PPG vs PPO on {spec.env_id}, {len(args.seeds)} seed(s): median, min-max band', references=references)

    head = ['variant', 'mean eval return over the run', 'IQM', 'final return', 'IQM']
    if reached:
        head.append(f'env steps to {spec.threshold:g}')
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for v in variants:
        cells = [labels[v], f'{statistics.median(means[v]):.1f} (' + ', '.join(f'{m:.1f}' for m in means[v]) + ')',
                 iqm_of(means[v]), f'{statistics.median(finals[v]):.1f}', iqm_of(finals[v])]
        if reached:
            cells.append(steps_cell(reached[v]))
        lines.append('| ' + ' | '.join(cells) + ' |')
    commands = {v: [shown_command(job(args, env, v, seed).cmd, args.threads) for seed in args.seeds] for v in variants}
    result = {'env_id': spec.env_id, 'steps': steps, 'milestones': marks, 'table': rows,
              'mean_eval_return': {v: {'median': statistics.median(means[v]), 'per_seed': means[v]} for v in variants},
              'final_returns': finals, 'threshold': spec.threshold, 'steps_to_threshold': reached,
              'configs': {v: config_of(env, v) for v in variants}, 'commands': commands,
              'runs': {v: dict(zip(args.seeds, runs[v])) for v in variants}}
    section = [f'## {spec.env_id}, {steps} env steps ({fmt_steps(steps)})', '',
               f"Configs `{spec.config_prefix}_ppo` and `{spec.config_prefix}_ppg` as shipped, stop value removed.", '',
               markdown_table(rows, marks, first_column='variant'), '', '\n'.join(lines), '',
               f'![{env} curves](curves_{env}.png)', '']
    return result, section


def build_report(args: argparse.Namespace) -> str:
    """Reads every run folder, writes results.json, the curve PNGs and table.md; returns the table text."""
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {'benchmark': 'ppg', 'seeds': args.seeds, 'threads': args.threads, 'versions': vers,
                     'variants': {v: {'label': label, 'overrides': overrides} for v, (_, overrides, label)
                                  in VARIANTS.items() if v in args.variants}, 'envs': {}}
    sections = ['# PPG (shared and dual architecture) against PPO', '',
                f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, {PARALLEL_RUNS} runs at a time (one per '
                'core). Every variant of an env gets the same env-step budget and its zoo config\'s evaluation '
                'schedule. PPG shared: `policy.model.share_encoder=true` (one encoder, the value head on detached '
                'features); PPG dual: `false` (separate policy and value networks, the policy network with an '
                'auxiliary value head). PPO shared: `policy.model.share_encoder=true` on PPO (one encoder, trained by the '
                'policy and the value loss), where run.', '']
    for env in args.envs:
        results['envs'][env], section = env_report(args, env)
        sections += section
    sections += ['Notes:',
                 '- Milestone returns are medians over seeds of the last evaluation at or before each milestone ("at '
                 '..." when it comes from earlier). The mean eval return over the run is the area under the eval '
                 'curve (each evaluation held until the next) divided by the budget: median over seeds, then each '
                 'seed. Final return is the last evaluation, after the whole budget.',
                 '- "Env steps to" is the env step of the first evaluation at or above the threshold (median over '
                 'seeds; "(k/n)" seeds got there, a seed that never did counts as slowest).',
                 '- Wall clock runs from the start of training to its end, evaluations included; updates/s counts '
                 'the train iterations each policy logs.',
                 f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.", '',
                 'Commands (first seed), from the repo root:', '', '```',
                 *[results['envs'][env]['commands'][v][0] for env in args.envs for v in args.variants], '```', '']
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join(sections)
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report_only:
        for env in args.envs:  # fail now, not after an hour, on a missing config, key or env package
            for variant in args.variants:
                check_tidal_config(*config_of(env, variant))
        for i, batch in enumerate(plan(args), 1):
            budgets = ', '.join(f'{ENVS[env].env_id} {args.budgets[env]} env steps' for env, _ in batch)
            run_batch(f'batch {i}: {budgets}', [item for _, item in batch], args.threads, pin=not args.no_pin)
    print('\n' + build_report(args))
    print(f'outputs in {display_path(args.out)}: results.json, curves_*.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
