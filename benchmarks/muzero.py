"""MuZero on CartPole-v1 with and without reanalyze, beside LightZero's MuZero, and the MuZero representation
under PPO against plain PPO (LightZero's tree alone is measured by mcts_speed.py).

Two comparisons, each over seeds, two runs at a time (one per core), stop values removed:
- `muzero`: zoo configs `cartpole_muzero` and `cartpole_muzero_reanalyze`, env steps and wall clock to an
  eval return of 475 (goal: within 20k env steps, median), and LightZero 0.2.0's own CartPole MuZero
  (`lightzero_cartpole_muzero.py`, in `benchmarks/.venv-lightzero`, set up on first use), each seed run
  side by side with tidal's `cartpole_muzero` of the same seed; `--no-lightzero` leaves it out;
- `repr`: zoo configs `cartpole_ppo` and `cartpole_muzero_repr_ppo` (the same PPO on h(o)), and the latter with h
  trained by MuZero's losses alone (`policy.repr.encoder_grad=false`), at equal env steps.
Writes `results.json`, `curves_<comparison>.png` and `table.md` in `benchmarks/results/muzero/`.

    python benchmarks/muzero.py [--seeds 0 1 2] [--muzero-steps 20000] [--repr-steps 50000]
        [--only muzero|ablation|repr] [--no-lightzero] [--skip RUN ...] [--parallel 2]

`--skip` leaves runs out of their comparisons by run name (a zoo config, or a key of VARIANTS: e.g.
`cartpole_muzero_reanalyze`); `--parallel 1` runs tidal's runs one after another on a shared machine.

`ablation` changes one thing at a time from `cartpole_muzero`: a quarter of each batch reanalyzed with the
same 10-step targets; the reanalyze of `cartpole_muzero_reanalyze` (5-step targets shrinking with age);
prioritized replay by value error; and a search that expands nodes the model predicts to be game over.
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from common import (BENCH_DIR, DI_ENGINE_PIN, LIGHTZERO_PIN, LIGHTZERO_VENV, Job, check_tidal_config, display_path,
                    ensure_lightzero_venv, read_run, run_lanes, shown_command, tidal_train_command, venv_python)
from report import (curve_mean, fmt_steps, iqm_of, library_row, markdown_table, milestones, plot_curves, steps_cell,
                    steps_to, steps_to_summary)

THRESHOLD = 475  # CartPole-v1's "solved" return
FULL_BUDGET = ['env.stop_value=null']  # every seed runs the whole budget: the zoo configs stop at 500
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 2048
LIGHTZERO_LABEL = 'LightZero MuZero'
LIGHTZERO_RUN = 'lightzero_cartpole_muzero'  # stands for a config: names its run folders
LIGHTZERO_RUNNER = BENCH_DIR / 'lightzero_cartpole_muzero.py'
LIGHTZERO_EVAL_FREQ = 1024  # env steps; LightZero evaluates at the first whole collect past each


@dataclass(frozen=True)
class Comparison:
    title: str
    configs: dict[str, str]  # label -> run name: a zoo config, or a key of VARIANTS
    plot_title: str
    lightzero_pair: Optional[str] = None  # the config whose runs LightZero's MuZero joins, seed by seed


COMPARISONS = {
    'muzero': Comparison('MuZero on CartPole-v1, with and without reanalyze',
                         {'MuZero': 'cartpole_muzero', 'MuZero Reanalyze': 'cartpole_muzero_reanalyze'},
                         'MuZero on CartPole-v1 (median, min-max band)',
                         lightzero_pair='cartpole_muzero'),
    'ablation': Comparison('MuZero on CartPole-v1, one change at a time: reanalyze, its schedule, priority replay',
                           {'MuZero (uniform replay, no reanalyze)': 'cartpole_muzero',
                            'reanalyze a quarter, 10-step targets, no age schedule': 'reanalyze_plain',
                            'reanalyze a quarter, 5-step targets shrinking with age': 'cartpole_muzero_reanalyze',
                            'priority replay (value error)': 'muzero_priority',
                            'search expands predicted game-over nodes': 'muzero_no_game_over_stop'},
                           'MuZero on CartPole-v1, one change at a time (median, min-max band)'),
    'repr': Comparison('PPO on the MuZero representation h(o) against PPO on the observation, CartPole-v1',
                       {'PPO': 'cartpole_ppo', 'PPO on MuZero repr': 'cartpole_muzero_repr_ppo',
                        'PPO on MuZero repr, h by MuZero losses only': 'repr_no_encoder_grad'},
                       'PPO on h(o) against PPO on o, CartPole-v1 (median, min-max band)'),
}
# run name -> (zoo config, overrides) of the runs that are a zoo config with options changed
VARIANTS = {'repr_no_encoder_grad': ('cartpole_muzero_repr_ppo', ['policy.repr.encoder_grad=false']),
            # cartpole_muzero's 10-step targets, with only the reanalyzed quarter (and its batching) added
            'reanalyze_plain': ('cartpole_muzero', ['policy.repr.reanalyze_ratio=0.25',
                                                    'policy.repr.reanalyze_td_steps=10',
                                                    'policy.repr.reanalyze_batch_size=64']),
            'muzero_priority': ('cartpole_muzero', ['policy.priority=true']),
            # the search as it was before it honoured the game-over head
            'muzero_no_game_over_stop': ('cartpole_muzero', ['policy.search.stop_at_predicted_game_over=false'])}


def zoo_config(run_name: str) -> tuple[str, list[str]]:
    config, overrides = VARIANTS.get(run_name, (run_name, []))
    return config, [*FULL_BUDGET, *overrides]


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--muzero-steps', type=int, default=20_000)
    parser.add_argument('--repr-steps', type=int, default=50_000)
    parser.add_argument('--only', nargs='+', choices=list(COMPARISONS), default=['muzero', 'repr'])
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=None, help='output folder (default: benchmarks/results/muzero)')
    parser.add_argument('--quick', action='store_true', help=f'smoke test: {QUICK_STEPS} steps, first seed only')
    parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--parallel', type=int, choices=[1, 2], default=PARALLEL_RUNS,
                        help="tidal's runs at a time without LightZero (default: %(default)s, one per core)")
    parser.add_argument('--skip', nargs='+', default=[], metavar='RUN',
                        help='run names (zoo configs or variant keys) to leave out of their comparisons')
    parser.add_argument('--report-only', action='store_true', help='rebuild the outputs from the run folders')
    parser.add_argument('--no-lightzero', action='store_true', help="leave LightZero's MuZero out of `muzero`")
    parser.add_argument('--lightzero-seeds', type=int, nargs='+', default=[0],
                        help="seeds of LightZero's runs (default: %(default)s; each takes far longer than tidal's)")
    parser.add_argument('--lightzero-wall-seconds', type=float, default=3000,
                        help='wall clock after which a LightZero run stops at its next evaluation (default: %(default)s)')
    args = parser.parse_args(argv)
    known = {config for spec in COMPARISONS.values() for config in spec.configs.values()}
    unknown = sorted(set(args.skip) - known)
    if unknown:
        parser.error(f'--skip: unknown run name(s) {unknown}; known: {sorted(known)}')
    args.budgets = {'muzero': args.muzero_steps, 'ablation': args.muzero_steps, 'repr': args.repr_steps}
    if args.quick:
        args.budgets = {name: QUICK_STEPS for name in args.budgets}
        args.seeds = args.seeds[:1]
    if args.out is None:
        args.out = BENCH_DIR / 'results' / ('muzero_quick' if args.quick else 'muzero')
    return args


def variants(args: argparse.Namespace, comparison: str) -> dict[str, str]:
    """Label -> config of the comparison's runs: tidal's zoo configs, then LightZero's unless left out."""
    spec = COMPARISONS[comparison]
    found = {label: config for label, config in spec.configs.items() if config not in args.skip}
    if spec.lightzero_pair is not None and not args.no_lightzero:
        found[LIGHTZERO_LABEL] = LIGHTZERO_RUN
    return found


def job(args: argparse.Namespace, comparison: str, config: str, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'{config}_seed{seed}'
    steps = args.budgets[comparison]
    if config == LIGHTZERO_RUN:
        cmd = [str(venv_python(LIGHTZERO_VENV)), display_path(LIGHTZERO_RUNNER), '--seed', str(seed),
               '--max-env-step', str(steps), '--eval-freq', str(LIGHTZERO_EVAL_FREQ), '--threads', str(args.threads),
               '--max-wall-seconds', str(args.lightzero_wall_seconds),
               '--run-dir', display_path(run_dir)]
        return Job(f'{config} seed {seed}', cmd, run_dir)
    zoo, overrides = zoo_config(config)
    return Job(f'{config} seed {seed}', tidal_train_command(zoo, seed, steps, run_dir, overrides), run_dir)


def lanes(args: argparse.Namespace) -> list[list[Job]]:
    """Two lanes, one per core: with LightZero, its (long) runs in one and every tidal run in the other;
    without, the tidal runs alternate between the two in order (comparison, seed, config)."""
    tidal, lightzero = [], []
    for name in args.only:
        for seed in args.seeds:
            for config in variants(args, name).values():
                if config == LIGHTZERO_RUN:
                    if seed in args.lightzero_seeds:
                        lightzero.append(job(args, name, config, seed))
                else:
                    tidal.append(job(args, name, config, seed))
    if lightzero:
        return [lightzero, tidal]
    return [tidal[i::args.parallel] for i in range(args.parallel)]


def seconds_to(run: dict, level: float) -> float | None:
    """Wall clock (training and evaluation) at the first evaluation at or above `level`."""
    step = steps_to(run['evals'], level)
    return None if step is None else next(row['wall_time'] for row in run['evals'] if row['env_step'] == step)


def comparison_report(args: argparse.Namespace, name: str) -> tuple[dict, list[str]]:
    spec, steps = COMPARISONS[name], args.budgets[name]
    marks = milestones(steps)
    configs = variants(args, name)
    title = spec.title + (f', beside {LIGHTZERO_LABEL}' if LIGHTZERO_LABEL in configs else '')
    seeds = {label: args.lightzero_seeds if config == LIGHTZERO_RUN else args.seeds for label, config in configs.items()}
    runs = {label: [read_run(job(args, name, config, seed).run_dir) for seed in seeds[label]]
            for label, config in configs.items()}
    rows = {label: library_row(runs[label], marks) for label in runs}
    plot_curves(runs, args.out / f'curves_{name}.png', spec.plot_title,
                references={f'{THRESHOLD}': THRESHOLD})
    head = ['variant', f'env steps to {THRESHOLD}', f'wall clock to {THRESHOLD} (s)', 'mean eval return over the run',
            'IQM', 'final return', 'IQM', 'wall clock of the run (s)']
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    result: dict = {'title': title, 'steps': steps, 'milestones': marks, 'table': rows, 'variants': {}}
    for label, config in configs.items():
        reached = steps_to_summary(runs[label], THRESHOLD)
        seconds = [seconds_to(run, THRESHOLD) for run in runs[label]]
        seconds_median = statistics.median(float('inf') if s is None else s for s in seconds)
        means = [curve_mean(run['evals'], steps) for run in runs[label]]
        finals = [run['evals'][-1]['return_mean'] for run in runs[label]]
        walls = [run['summary']['wall_time'] for run in runs[label]]
        lines.append('| ' + ' | '.join([
            label, steps_cell(reached),
            'not reached' if seconds_median == float('inf') else f'{seconds_median:.0f}',
            f'{statistics.median(means):.1f} (' + ', '.join(f'{m:.1f}' for m in means) + ')', iqm_of(means),
            f'{statistics.median(finals):.1f}', iqm_of(finals), f'{statistics.median(walls):.0f}']) + ' |')
        result['variants'][label] = {
            'config': config, 'steps_to_threshold': reached, 'seconds_to_threshold': seconds,
            'mean_eval_return': means, 'final_returns': finals, 'wall_time': walls,
            'commands': [shown_command(job(args, name, config, seed).cmd, args.threads) for seed in seeds[label]],
            'runs': dict(zip(seeds[label], runs[label]))}
    tidal_runs = {label: config for label, config in configs.items() if config != LIGHTZERO_RUN}
    section = [f'## {title}, {steps} env steps ({fmt_steps(steps)})', '',
               'Configs ' + ', '.join(f'`{c}`' for c in tidal_runs.values() if c not in VARIANTS) + ' as shipped, stop '
               'value removed' + ''.join(f'; {label}: `{zoo_config(c)[0]}` with {", ".join(VARIANTS[c][1])}'
                                        for label, c in tidal_runs.items() if c in VARIANTS) + '.'
               + (f' {LIGHTZERO_LABEL}: LightZero\'s own CartPole MuZero config, see the notes.'
                  if LIGHTZERO_LABEL in configs else '')
               + ''.join(f' Left out (`--skip`): `{c}`.' for c in spec.configs.values() if c in args.skip), '',
               markdown_table(rows, marks, first_column='variant'), '', '\n'.join(lines), '',
               f'![{name} curves](curves_{name}.png)', '']
    return result, section


def build_report(args: argparse.Namespace) -> str:
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict = {'benchmark': 'muzero', 'seeds': args.seeds, 'threads': args.threads, 'versions': vers,
                     'comparisons': {}}
    sections = ['# MuZero: CartPole with and without reanalyze; its representation under PPO', '',
                f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, {args.parallel} run(s) at a time (one per '
                'core), stop values removed so every seed runs the whole budget.', '']
    for name in args.only:
        results['comparisons'][name], section = comparison_report(args, name)
        sections += section
    sections += ['Notes:',
                 f'- "Env steps to {THRESHOLD}" is the env step of the first evaluation at or above it (median over '
                 'seeds; "(k/n)" seeds got there, a seed that never did counts as slowest); its wall clock is the '
                 "run's time at that evaluation, evaluations included.",
                 '- The mean eval return over the run is the area under the eval curve divided by the budget.',
                 f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.",
                 *([f'- {LIGHTZERO_LABEL}: `{LIGHTZERO_PIN}` with `{DI_ENGINE_PIN}` in `{display_path(LIGHTZERO_VENV)}` '
                    "(tidal's torch and numpy), its zoo config `cartpole_muzero_config` as shipped (8 collector envs "
                    'of 8 episodes per collect, 25 simulations, 100 updates of batch 256 per collect) on CartPole-v1, '
                    'CPU, in-process envs, no stop value; evaluated by its own evaluator on 5 episodes (one per env) '
                    f'at the first collect past every {LIGHTZERO_EVAL_FREQ} env steps, run by '
                    f'`{display_path(LIGHTZERO_RUNNER)}` on one core while tidal\'s runs went one after another on the '
                    'other.']
                   if any(LIGHTZERO_LABEL in variants(args, name) for name in args.only) else []), '',
                 'Commands (first seed), from the repo root:', '', '```',
                 *[variant['commands'][0] for comparison in results['comparisons'].values()
                   for variant in comparison['variants'].values()], '```', '']
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join(sections)
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report_only:
        planned = lanes(args)
        for name in args.only:  # fail now, not after an hour, on a missing config or key
            for config in COMPARISONS[name].configs.values():
                check_tidal_config(*zoo_config(config))
        if any(LIGHTZERO_RUN in variants(args, name).values() for name in args.only):
            ensure_lightzero_venv(training=True)  # once, before any run: installs LightZero's training stack
        for i, lane in enumerate(planned):
            print(f'\n== lane {i + 1} (one core), one run after another:', flush=True)
            for item in lane:
                print(f'$ {shown_command(item.cmd, args.threads)}', flush=True)
        run_lanes(planned, args.threads, pin=not args.no_pin)
    print('\n' + build_report(args))
    print(f'outputs in {display_path(args.out)}: results.json, curves_*.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
