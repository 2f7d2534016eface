"""SAC with a state-value network (`sac_v`) against tidal's SAC (`sac`) on Pendulum-v1.

Both policies get the settings of the tidal-vs-SB3 comparison (`sac_pendulum.py`) where their configs
have the key, and `sac_v` a [256, 256] value network trained at the same learning rate. Each zoo config
keeps its own entropy setting: `sac` tunes alpha, `sac_v` fixes it as its paper does. Per seed the two
runs start together, one per core; seeds run one after another. Outputs `results.json`, `curves.png`
and `table.md` in `benchmarks/results/sac_v_pendulum/`.

    python benchmarks/sac_v_pendulum.py [--seeds 0 1 2] [--steps 20000] [--threads 1] [--report-only]
"""
import argparse
import importlib.metadata
import json
import statistics
import sys

from common import (Job, applicable_overrides, benchmark_args, benchmark_parser, display_path, read_run, run_batch,
                    shown_command, tidal_train_command)
from report import library_row, markdown_table, milestones, plot_curves
from sac_pendulum import EVAL_EPISODES, TIDAL_OVERRIDES

CONFIGS = {'sac_v': 'pendulum_sac_v', 'sac': 'pendulum_sac'}
LABELS = {'sac_v': 'SAC with V network (sac_v)', 'sac': 'SAC (sac)'}
# Only sac_v has a state-value network: the size and learning rate of its actor and critics.
VALUE_OVERRIDES = ['policy.model.value_hidden_sizes=[256,256]', 'policy.learn.learning_rate_value=3e-4']


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    return benchmark_args(benchmark_parser(__doc__, 20_000, threads=True, pin=True), argv, 'sac_v_pendulum')


def policy_overrides() -> dict[str, dict[str, list[str]]]:
    """Per policy, the comparison overrides it takes (`set`) and those its config has no key for (`skipped`)."""
    settings = {}
    for policy, config in CONFIGS.items():
        wanted = TIDAL_OVERRIDES + (VALUE_OVERRIDES if policy == 'sac_v' else [])
        kept, skipped = applicable_overrides(config, wanted)
        settings[policy] = {'set': kept, 'skipped': skipped}
    return settings


def entropy_setting(config: str, overrides: list[str]) -> str:
    """How the run's temperature is chosen, read from its compiled config."""
    from tidal.config import compile_config, resolve_config_source

    learn = compile_config(*resolve_config_source(config), overrides=overrides).policy.learn
    if learn.auto_alpha:
        target = '-dim(A)' if learn.target_entropy is None else f'{learn.target_entropy:g}'
        return f'alpha tuned towards entropy {target} from {learn.alpha:g} (lr {learn.learning_rate_alpha:g})'
    return f'alpha fixed at {learn.alpha:g}, reward scale {learn.reward_scale:g}'


def seed_jobs(args: argparse.Namespace, seed: int, settings: dict) -> dict[str, Job]:
    """The sac_v and sac runs of one seed, keyed by policy."""
    jobs = {}
    for policy, config in CONFIGS.items():
        run_dir = args.out / 'runs' / f'{policy}_seed{seed}'
        cmd = tidal_train_command(config, seed, args.steps, run_dir, settings[policy]['set'])
        jobs[policy] = Job(f'{policy} seed {seed}', cmd, run_dir)
    return jobs


def build_report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]], settings: dict) -> str:
    """Reads every run folder, writes results.json, curves.png and table.md; returns the table text."""
    runs = {policy: [read_run(jobs[seed][policy].run_dir) for seed in args.seeds] for policy in CONFIGS}
    marks = milestones(args.steps)
    rows = {LABELS[policy]: library_row(runs[policy], marks) for policy in CONFIGS}
    ratios = {seed: v['summary']['wall_time'] / s['summary']['wall_time']
              for seed, v, s in zip(args.seeds, runs['sac_v'], runs['sac'])}
    ratio = statistics.median(ratios.values())
    commands = {policy: {seed: shown_command(jobs[seed][policy].cmd, args.threads) for seed in args.seeds}
                for policy in CONFIGS}
    entropy = {policy: entropy_setting(CONFIGS[policy], settings[policy]['set']) for policy in CONFIGS}
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({LABELS[policy]: runs[policy] for policy in CONFIGS}, args.out / 'curves.png',
                f'sac_v vs sac on Pendulum-v1, {len(args.seeds)} seed(s): median, min-max band')
    results = {'benchmark': 'sac_v_pendulum', 'env_id': 'Pendulum-v1', 'steps': args.steps, 'seeds': args.seeds,
               'threads': args.threads, 'milestones': marks, 'versions': vers, 'configs': CONFIGS,
               'overrides': settings, 'entropy': entropy, 'commands': commands, 'table': rows,
               'wall_clock_ratio_sac_v_over_sac': {'median': ratio, 'per_seed': ratios},
               'runs': {policy: dict(zip(args.seeds, runs[policy])) for policy in CONFIGS}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    per_seed = ', '.join(f'seed {seed}: {r:.2f}' for seed, r in ratios.items())
    skipped = [f"`{item.partition('=')[0]}` (not a `{CONFIGS[policy]}` key)"
               for policy in CONFIGS for item in settings[policy]['skipped']]
    text = '\n'.join([
        '# SAC with a state-value network (sac_v) vs SAC (sac) on Pendulum-v1', '',
        f'{args.steps} env steps, seeds {args.seeds}, {args.threads} torch thread(s) per run; per seed the two '
        'policies trained at the same time, one per core. Both: batch 256, lr 3e-4, [256, 256] actor and twin '
        'critics, 100 random warm-up steps, 1 update per env step, gamma 0.99, tau 0.005, '
        f'{EVAL_EPISODES} deterministic evaluation episodes; sac_v also has a [256, 256] state-value network '
        '(lr 3e-4) whose Polyak-averaged copy gives the critics\' targets.', '',
        markdown_table(rows, marks, first_column='policy'), '',
        f'sac_v/sac wall-clock ratio (per seed pair, then median): **{ratio:.2f}** ({per_seed}).', '',
        'Notes:',
        f"- Entropy: sac, {entropy['sac']}; sac_v, {entropy['sac_v']} (each zoo config's own choice, kept "
        'here; the alpha learning rate is set on both but only used where alpha is tuned).',
        *([f"- Comparison overrides left out: {', '.join(skipped)}."] if skipped else []),
        '- Returns are medians over seeds of the last evaluation at or before each milestone. Evaluations '
        'come every 1000 train iterations; with 100 warm-up steps iteration k is env step k+100, so a cell '
        'can come from up to 1000 env steps before its milestone (shown as "at ...").',
        '- Wall clock runs from the start of training to its end and includes evaluation; env steps/s and '
        'updates/s are totals divided by it.',
        f"- Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.",
        '', 'Commands, from the repo root:', '', '```',
        *[commands[policy][seed] for seed in args.seeds for policy in CONFIGS], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    settings = policy_overrides()
    jobs = {seed: seed_jobs(args, seed, settings) for seed in args.seeds}
    if not args.report_only:
        for seed in args.seeds:
            run_batch(f'seed {seed}: sac_v and sac side by side, {args.steps} env steps', list(jobs[seed].values()),
                      args.threads, pin=not args.no_pin)
    print('\n' + build_report(args, jobs, settings))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
