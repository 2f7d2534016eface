"""Side-by-side benchmark of tidal PPO against Stable-Baselines3 PPO on CartPole-v1, plus tidal's tuned config.

Two arms share SB3's PPO defaults (one env, 2048-step rollouts, batch 64, 10 epochs, lr 3e-4, separate
64-64 tanh networks, ...): tidal's `cartpole_ppo` with overrides reproducing them, and SB3
(`sb3_ppo_runner.py`, in its own venv). For each seed the two start together, one per core, so their
wall-clock ratio is measured on the same loaded machine. A third arm runs the `cartpole_ppo` zoo
config as shipped (tuned to reach 500 in few env steps), two seeds at a time. Every arm runs its whole
budget (no stop value). Outputs `results.json`, `curves.png` and `table.md`.

    python benchmarks/ppo_cartpole.py [--seeds 0 1 2] [--steps 51200] [--tuned-steps 51200] [--quick]
"""
import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from common import (BENCH_DIR, SB3_VENV, Job, benchmark_args, benchmark_parser, check_tidal_config, display_path,
                    ensure_sb3_venv, merge_overrides, read_run, run_batch, shown_command, tidal_train_command,
                    venv_python)
from report import (fmt_steps, library_row, markdown_table, milestones, plot_curves, steps_cell,
                    steps_to_summary)
from sac_pendulum import versions

TIDAL_CONFIG = 'cartpole_ppo'
ROLLOUT, BATCH, EPOCHS = 2048, 64, 10  # SB3's PPO defaults with one env
EVAL_EVERY = ROLLOUT  # env steps: one evaluation per rollout on both sides
EVAL_EPISODES = 10
SOLVED, MAX_RETURN = 475, 500  # CartPole-v1 counts as solved at 475; episodes end at 500 steps
FULL_BUDGET = ['env.stop_value=null']  # run every step of the budget: the zoo config stops early
# SB3's PPO defaults as tidal config keys; sb3_ppo_runner.py gets them from PPO('MlpPolicy', env).
TIDAL_OVERRIDES = [
    'env.collector_env_num=1',
    f'env.evaluator_env_num={EVAL_EPISODES}',  # both sides step the evaluation episodes as one batch
    f'env.n_evaluator_episode={EVAL_EPISODES}',
    *FULL_BUDGET,
    f'policy.collect.n_sample={ROLLOUT}',
    'policy.collect.discount_factor=0.99',
    'policy.collect.gae_lambda=0.95',
    f'policy.learn.epoch_per_collect={EPOCHS}',
    f'policy.learn.batch_size={BATCH}',
    'policy.learn.learning_rate=3e-4',
    'policy.learn.lr_decay=false',  # SB3's defaults keep the learning rate and the clip range constant
    'policy.learn.clip_decay=false',
    'policy.normalize.obs=false',  # SB3's defaults use no VecNormalize
    'policy.normalize.reward=false',
    'policy.learn.clip_ratio=0.2',
    'policy.learn.value_clip_ratio=null',
    'policy.learn.value_weight=0.5',
    'policy.learn.entropy_weight=0.0',
    'policy.learn.adv_norm=true',
    'policy.learn.grad_clip_norm=0.5',
    'policy.model.encoder_hidden_sizes=[64,64]',
    'policy.model.activation=tanh',
    'policy.model.share_encoder=false',
    # train iterations are minibatch updates: one rollout makes EPOCHS * ceil(ROLLOUT / BATCH) of them
    f'policy.eval.evaluator.eval_freq={EPOCHS * math.ceil(ROLLOUT / BATCH)}',
]
ARMS = {'tidal': 'tidal (SB3 defaults)', 'sb3': 'Stable-Baselines3', 'tuned': f'tidal {TIDAL_CONFIG} (tuned)'}
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 2 * ROLLOUT


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 25 * ROLLOUT, QUICK_STEPS, threads=True, sets=True, pin=True)
    parser.add_argument('--tuned-steps', type=int, default=25 * ROLLOUT, help='env steps per run of the tuned arm')
    args = benchmark_args(parser, argv, 'ppo_cartpole')
    if args.quick:
        args.tuned_steps = QUICK_STEPS
    if args.steps % ROLLOUT:
        parser.error(f'--steps must be a multiple of {ROLLOUT}: SB3 always finishes its rollout')
    return args


def seed_jobs(args: argparse.Namespace, seed: int, sb3_python: Path) -> dict[str, Job]:
    """The three runs of one seed, keyed by arm."""
    runs = args.out / 'runs'
    dirs = {arm: runs / f'{arm}_seed{seed}' for arm in ARMS}
    overrides = merge_overrides(TIDAL_OVERRIDES, args.extra_sets)
    sb3_cmd = [str(sb3_python), display_path(BENCH_DIR / 'sb3_ppo_runner.py'), '--seed', str(seed),
               '--steps', str(args.steps), '--run-dir', display_path(dirs['sb3']), '--eval-every', str(EVAL_EVERY),
               '--eval-episodes', str(EVAL_EPISODES), '--threads', str(args.threads)]
    return {'tidal': Job(f'tidal seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.steps, dirs['tidal'],
                                                                   overrides), dirs['tidal']),
            'sb3': Job(f'SB3 seed {seed}', sb3_cmd, dirs['sb3']),
            'tuned': Job(f'tuned seed {seed}', tidal_train_command(TIDAL_CONFIG, seed, args.tuned_steps,
                                                                   dirs['tuned'], FULL_BUDGET), dirs['tuned'])}


def rollout_milestones(steps: int) -> list[int]:
    """Five milestones moved to whole rollouts, where both sides evaluate (10.24k ... 51.2k for 25 rollouts)."""
    return sorted({ROLLOUT * max(1, round(mark / ROLLOUT)) for mark in milestones(steps, parts=5)})


def per_seed_table(head: list[str], rows: list[list[str]]) -> str:
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    return '\n'.join(lines + ['| ' + ' | '.join(row) + ' |' for row in rows])


def build_report(args: argparse.Namespace, jobs: dict[int, dict[str, Job]]) -> str:
    """Reads every run folder, writes results.json, curves.png and table.md; returns the table text."""
    runs = {arm: [read_run(jobs[seed][arm].run_dir) for seed in args.seeds] for arm in ARMS}
    budget = {'tidal': args.steps, 'sb3': args.steps, 'tuned': args.tuned_steps}
    marks = {arm: rollout_milestones(budget[arm]) for arm in ARMS}
    rows = {arm: library_row(runs[arm], marks[arm]) for arm in ARMS}
    solved = {arm: steps_to_summary(runs[arm], SOLVED) for arm in ARMS}
    perfect = steps_to_summary(runs['tuned'], MAX_RETURN)
    finals = {arm: [run['evals'][-1]['return_mean'] for run in runs[arm]] for arm in ARMS}
    walls = {arm: [run['summary']['wall_time'] for run in runs[arm]] for arm in ARMS}
    ratios = [t / s for t, s in zip(walls['tidal'], walls['sb3'])]
    ratio = {'median_of_seed_ratios': statistics.median(ratios),
             'ratio_of_medians': statistics.median(walls['tidal']) / statistics.median(walls['sb3']),
             'per_seed': dict(zip(args.seeds, ratios))}
    commands = {arm: {seed: shown_command(jobs[seed][arm].cmd, args.threads) for seed in args.seeds} for arm in ARMS}
    vers = versions([jobs[seed]['sb3'].run_dir for seed in args.seeds])

    args.out.mkdir(parents=True, exist_ok=True)
    plot_curves({ARMS[arm]: runs[arm] for arm in ARMS}, args.out / 'curves.png',
                f'PPO on CartPole-v1, {len(args.seeds)} seed(s): median, min-max band',
                references={f'solved ({SOLVED})': SOLVED})
    results = {'benchmark': 'ppo_cartpole', 'env_id': 'CartPole-v1', 'steps': args.steps,
               'tuned_steps': args.tuned_steps, 'seeds': args.seeds, 'threads': args.threads,
               'tidal_overrides': merge_overrides(TIDAL_OVERRIDES, args.extra_sets), 'milestones': marks,
               'versions': vers, 'commands': commands, 'table': {ARMS[arm]: rows[arm] for arm in ARMS},
               'steps_to_475': solved, 'tuned_steps_to_500': perfect, 'final_returns': finals,
               'wall_clock_ratio_tidal_over_sb3': ratio,
               'runs': {arm: dict(zip(args.seeds, runs[arm])) for arm in ARMS}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')

    def steps(value: int | None) -> str:
        return 'not reached' if value is None else fmt_steps(value)

    side_by_side = per_seed_table(
        ['seed', 'tidal steps to 475', 'SB3 steps to 475', 'tidal wall (s)', 'SB3 wall (s)', 'tidal/SB3',
         'tidal final return', 'SB3 final return'],
        [[str(seed), steps(solved['tidal']['per_seed'][i]), steps(solved['sb3']['per_seed'][i]),
          f"{walls['tidal'][i]:.1f}", f"{walls['sb3'][i]:.1f}", f'{ratios[i]:.2f}',
          f"{finals['tidal'][i]:.1f}", f"{finals['sb3'][i]:.1f}"] for i, seed in enumerate(args.seeds)]
        + [['median', steps_cell(solved['tidal']), steps_cell(solved['sb3']),
            f"{statistics.median(walls['tidal']):.1f}", f"{statistics.median(walls['sb3']):.1f}",
            f"{ratio['median_of_seed_ratios']:.2f}", f"{statistics.median(finals['tidal']):.1f}",
            f"{statistics.median(finals['sb3']):.1f}"]])
    tuned = per_seed_table(
        ['seed', 'steps to 475', 'steps to 500', 'final return', 'wall (s)'],
        [[str(seed), steps(solved['tuned']['per_seed'][i]), steps(perfect['per_seed'][i]),
          f"{finals['tuned'][i]:.1f}", f"{walls['tuned'][i]:.1f}"] for i, seed in enumerate(args.seeds)]
        + [['median', steps_cell(solved['tuned']), steps_cell(perfect), f"{statistics.median(finals['tuned']):.1f}",
            f"{statistics.median(walls['tuned']):.1f}"]])
    extra = f" plus {', '.join(args.extra_sets)}" if args.extra_sets else ''
    text = '\n'.join([
        '# PPO on CartPole-v1: tidal vs Stable-Baselines3', '',
        f'## SB3 defaults on both sides, {args.steps} env steps ({args.steps // ROLLOUT} rollouts)', '',
        f'Seeds {args.seeds}, {args.threads} torch thread(s) per run; for each seed the two libraries trained '
        'at the same time, one per core. SB3: `PPO(\'MlpPolicy\', env)` with its defaults and one env; tidal: '
        f'`{TIDAL_CONFIG}` with the same settings{extra}: {ROLLOUT}-step rollouts from one env, {EPOCHS} epochs '
        f'of batch {BATCH}, lr 3e-4, gamma 0.99, GAE lambda 0.95, clip 0.2, no value clipping, value weight '
        '0.5, no entropy bonus, advantages normalised, gradient norm clipped at 0.5, separate [64, 64] tanh '
        f'actor and critic. Both evaluate {EVAL_EPISODES} deterministic episodes before learning and after '
        'every rollout\'s update phase.', '',
        markdown_table({ARMS[arm]: rows[arm] for arm in ('tidal', 'sb3')}, marks['tidal']), '',
        side_by_side, '',
        f"tidal/SB3 wall-clock ratio: **{ratio['median_of_seed_ratios']:.2f}** (median of the per-seed ratios); "
        f"{ratio['ratio_of_medians']:.2f} (ratio of the median wall clocks).", '',
        f'## tidal `{TIDAL_CONFIG}` as shipped, {args.tuned_steps} env steps', '',
        f'The zoo config\'s own settings (tuned to reach {MAX_RETURN} in few env steps), stop value removed; '
        f'{PARALLEL_RUNS} runs at a time, one per core.', '',
        markdown_table({ARMS['tuned']: rows['tuned']}, marks['tuned'], first_column='config'), '',
        tuned, '',
        '![curves](curves.png)', '',
        'Notes:',
        '- "Steps to 475/500" is the env step of the first evaluation at or above it (median over seeds; '
        '"(k/n)" seeds got there, a seed that never did counts as slowest). Final return is the last '
        'evaluation, after the whole budget. Milestone returns are medians of the last evaluation at or '
        'before each milestone ("at ..." when it comes from earlier).',
        '- Wall clock runs from the start of training to its end and includes evaluation. updates/s counts '
        'minibatch updates on both sides (SB3\'s own `n_updates` counts epochs).',
        '- Implementation details neither side exposes as a setting (weight initialisation, how an episode '
        'cut at 500 steps bootstraps, per-minibatch advantage normalisation) follow each library\'s own code.',
        f"- Versions: tidal {vers['tidal'].get('tidal')}, torch {vers['tidal'].get('torch')}; "
        f"stable-baselines3 {vers['sb3'].get('stable-baselines3')}, torch {vers['sb3'].get('torch')}; "
        f"gymnasium {vers['tidal'].get('gymnasium')}.",
        '', 'Repeat the runs of the first seed from the repo root with:', '', '```',
        *[commands[arm][args.seeds[0]] for arm in ARMS], '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sb3_python = venv_python(SB3_VENV) if args.report_only else ensure_sb3_venv()
    jobs = {seed: seed_jobs(args, seed, sb3_python) for seed in args.seeds}
    if not args.report_only:
        check_tidal_config(TIDAL_CONFIG, merge_overrides(TIDAL_OVERRIDES, args.extra_sets))
        batches = [(f'seed {seed}: tidal and SB3 side by side, {args.steps} env steps',
                    [jobs[seed]['tidal'], jobs[seed]['sb3']]) for seed in args.seeds]
        batches += [(f'tuned {TIDAL_CONFIG}, seeds {args.seeds[i:i + PARALLEL_RUNS]}, {args.tuned_steps} env steps',
                     [jobs[seed]['tuned'] for seed in args.seeds[i:i + PARALLEL_RUNS]])
                    for i in range(0, len(args.seeds), PARALLEL_RUNS)]
        for title, batch in batches:
            run_batch(title, batch, args.threads, pin=not args.no_pin)
    print('\n' + build_report(args, jobs))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
