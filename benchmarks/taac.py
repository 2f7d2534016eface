"""TAAC, TaacL and TaacQ against tidal's SAC on MountainCarContinuous-v0 and Pendulum-v1.

Every policy runs its zoo config (`<env>_taac`, `<env>_taac_l`, `<env>_taac_q`, `<env>_sac`: the same
networks, learning rates, 256 transitions per update, 1000 random warm-up steps) for the same env-step
budget. Runs go two at a time, one per core: TAAC beside SAC (their wall-clock ratio is measured side
by side), then TaacL beside TaacQ. The mean number of steps a trajectory is followed per decision is
read from each TAAC run's replay buffer (the collected steps after the warm-up). Outputs
`results.json`, `curves_<env>.png` and `table.md` in `benchmarks/results/taac/`.

    python benchmarks/taac.py [--seeds 0 1 2] [--mountaincar-steps 20000] [--pendulum-steps 10000]
"""
import argparse
import importlib.metadata
import json
import statistics
import sys
from pathlib import Path

from common import BENCH_DIR, Job, display_path, read_run, run_batch, shown_command, tidal_train_command
from report import library_row, markdown_table, milestones, plot_curves

ENVS = {'mountaincar': 'MountainCarContinuous-v0', 'pendulum': 'Pendulum-v1'}
POLICIES = {'taac': 'TAAC', 'taac_l': 'TaacL', 'taac_q': 'TaacQ', 'sac': 'SAC'}
PAIRS = (('taac', 'sac'), ('taac_l', 'taac_q'))
SOLVED = {'mountaincar': 90.0}  # MountainCarContinuous counts as solved at a return of 90
# run the whole budget (the zoo configs stop at their stop value) and log less often
OVERRIDES = ['env.stop_value=null', 'policy.learn.learner.log_freq=500']


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--seeds', type=int, nargs='+', default=[0, 1, 2])
    parser.add_argument('--mountaincar-steps', type=int, default=20_000)
    parser.add_argument('--pendulum-steps', type=int, default=10_000)
    parser.add_argument('--envs', nargs='+', choices=sorted(ENVS), default=list(ENVS))
    parser.add_argument('--threads', type=int, default=1, help='torch threads per training process')
    parser.add_argument('--out', type=Path, default=BENCH_DIR / 'results' / 'taac', help='output folder')
    parser.add_argument('--no-pin', action='store_true', help='do not pin each run to its own cores')
    parser.add_argument('--report-only', action='store_true',
                        help='skip training; rebuild the outputs from the run folders in --out')
    return parser.parse_args(argv)


def budget(args: argparse.Namespace, env: str) -> int:
    return args.mountaincar_steps if env == 'mountaincar' else args.pendulum_steps


def job(args: argparse.Namespace, env: str, policy: str, seed: int) -> Job:
    run_dir = args.out / 'runs' / f'{env}_{policy}_seed{seed}'
    cmd = tidal_train_command(f'{env}_{policy}', seed, budget(args, env), run_dir, OVERRIDES)
    return Job(f'{env} {policy} seed {seed}', cmd, run_dir)


def decision_length(run_dir: Path, warmup: int) -> dict:
    """Steps per decision (collected steps / switches) after the warm-up, over the run and its last quarter."""
    import torch

    state = torch.load(run_dir / 'ckpt' / 'latest.pt', map_location='cpu', weights_only=False)
    buffer = state['replay_buffer']
    # the buffer never wrapped in these budgets, so row k is env step k
    switch = buffer['columns']['switch'][warmup:buffer['size']].float()
    last = switch[-len(switch) // 4:]
    return {'all': len(switch) / max(float(switch.sum()), 1.0), 'last_quarter': len(last) / max(float(last.sum()), 1.0)}


def build_report(args: argparse.Namespace) -> str:
    """Reads every run folder, writes results.json, the curve PNGs and table.md; returns the table text."""
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'gymnasium')}
    results: dict = {'benchmark': 'taac', 'seeds': args.seeds, 'threads': args.threads, 'overrides': OVERRIDES,
                     'versions': vers, 'envs': {}}
    sections = ['# TAAC, TaacL and TaacQ against SAC', '',
                f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, two runs at a time (one per core): '
                'TAAC beside SAC, then TaacL beside TaacQ. Zoo configs `<env>_<policy>`: [256, 256] actor and twin '
                'critics, lr 3e-4, 256 transitions per update (TAAC: 64 sequences of 4 steps), 1 update per env '
                'step, 1000 random warm-up steps, gamma 0.99, Polyak 0.005, 5 evaluation episodes every 1000 '
                'updates (TAAC evaluates epsilon-greedily with epsilon 0.1, SAC deterministically).', '']
    for env in args.envs:
        steps, marks = budget(args, env), milestones(budget(args, env))
        runs = {p: [read_run(job(args, env, p, seed).run_dir) for seed in args.seeds] for p in POLICIES}
        rows = {POLICIES[p]: library_row(runs[p], marks) for p in POLICIES}
        lengths = {p: [decision_length(job(args, env, p, seed).run_dir, 1000) for seed in args.seeds]
                   for p in POLICIES if p != 'sac'}
        ratios = [t['summary']['wall_time'] / s['summary']['wall_time'] for t, s in zip(runs['taac'], runs['sac'])]
        finals = {p: [run['evals'][-1]['return_mean'] for run in runs[p]] for p in POLICIES}
        best = {p: [max(row['return_mean'] for row in run['evals']) for run in runs[p]] for p in POLICIES}
        references = {'solved (90)': SOLVED[env]} if env in SOLVED else None
        plot_curves({POLICIES[p]: runs[p] for p in POLICIES}, args.out / f'curves_{env}.png',
                    f'{ENVS[env]}, {len(args.seeds)} seed(s): median, min-max band',
                    ylabel='eval return (TAAC: epsilon-greedy 0.1)', references=references)
        results['envs'][env] = {
            'env_id': ENVS[env], 'steps': steps, 'milestones': marks, 'table': rows, 'final_returns': finals,
            'best_returns': best, 'steps_per_decision': lengths, 'wall_clock_ratio_taac_over_sac': ratios,
            'commands': {p: [shown_command(job(args, env, p, seed).cmd, args.threads) for seed in args.seeds]
                         for p in POLICIES},
            'runs': {p: dict(zip(args.seeds, runs[p])) for p in POLICIES}}
        solved = ''
        if env in SOLVED:
            counts = {POLICIES[p]: sum(r >= SOLVED[env] for r in finals[p]) for p in POLICIES}
            solved = ('Seeds whose last evaluation is at or above 90 (solved): '
                      + ', '.join(f'{name} {n}/{len(args.seeds)}' for name, n in counts.items()) + '.')
        sections += [
            f'## {ENVS[env]}, {steps} env steps', '',
            markdown_table(rows, marks, first_column='policy'), '',
            'Last and best evaluation per seed: ' + '; '.join(
                f"{POLICIES[p]} {', '.join(f'{r:.1f}' for r in finals[p])} (best {', '.join(f'{r:.1f}' for r in best[p])})"
                for p in POLICIES) + '.', '',
            *([solved, ''] if solved else []),
            'Steps per decision (collected steps after the warm-up / switches; median over seeds, whole run and '
            'last quarter): ' + '; '.join(
                f"{POLICIES[p]} {statistics.median(x['all'] for x in lengths[p]):.2f} / "
                f"{statistics.median(x['last_quarter'] for x in lengths[p]):.2f}" for p in lengths) + '. SAC: 1.',
            '',
            f'TAAC/SAC wall-clock ratio, side by side (median of seeds): **{statistics.median(ratios):.2f}** '
            f"({', '.join(f'{r:.2f}' for r in ratios)}).", '',
            f'![{env} curves](curves_{env}.png)', '']
    sections += ['Returns are medians over seeds of the last evaluation at or before each milestone ("at ..." when it '
                 'comes from earlier). Wall clock runs from the start of training to its end, evaluations included.',
                 f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, gymnasium {vers['gymnasium']}.", '',
                 'Commands, from the repo root:', '', '```',
                 *[c for env in args.envs for p in POLICIES for c in results['envs'][env]['commands'][p]], '```', '']
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join(sections)
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if not args.report_only:
        for seed in args.seeds:
            for env in args.envs:
                for pair in PAIRS:
                    jobs = [job(args, env, policy, seed) for policy in pair]
                    run_batch(f'{ENVS[env]}, seed {seed}: {" and ".join(pair)} side by side, '
                              f'{budget(args, env)} env steps', jobs, args.threads, pin=not args.no_pin)
    print('\n' + build_report(args))
    print(f'outputs in {display_path(args.out)}: results.json, curves_*.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
