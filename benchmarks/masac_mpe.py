"""Multi-agent SAC on MPE simple_spread (PettingZoo, 3 agents): centralised critics against independent learners
and a uniform random policy (tidal only).

Variants, each over seeds, two runs at a time (one per core), for the same env-step budget. `--arms` picks
the set:
- 'agent_reward' (default), each agent learning from its own reward:
  - `mpe_spread_discrete_sac` and `mpe_spread_sac`: MASAC, a shared actor and twin critics on the global state;
  - the discrete config with `policy.model.global_critic=false`: independent SAC per agent (shared weights,
    each agent's critic on its own observation);
- 'team_reward', every agent learning from the team's reward (`env.team_reward`, the agents' rewards summed):
  - discrete MASAC and independent SAC as above;
  - discrete MASAC with DI-engine's simple_spread settings (its ptz_simple_spread_masac_config): 3 agents,
    3 landmarks, 25 cycles, as the zoo config; its reward, the team's, with each agent's term global +
    local reward instead of mpe2's half of each (`env.reward_scale=2`, so DI-engine's returns are twice
    those here); and its epsilon-greedy collection, linear from 1 to 0.05 over 100k env steps. Not taken:
    its target_entropy=-2, below any categorical's entropy (tidal keeps 0.98 log 5), and its `done` at the
    25-step limit (tidal bootstraps a truncated episode).
- a uniform random policy, measured once over `--random-episodes` episodes.
The return is the episode's reward summed over the agents (25 steps), the env's own rewards whatever the
variant learns from. Writes `results.json`, `curves.png` and `table.md` in `benchmarks/results/masac_mpe/`
(`masac_mpe_team_reward/` for the team set).

    python benchmarks/masac_mpe.py [--arms agent_reward|team_reward] [--seeds 0 1 2] [--steps 300000]
"""
import argparse
import importlib.metadata
import json
import statistics
import sys

import numpy as np

from common import (Job, benchmark_args, benchmark_parser, check_tidal_config, display_path, read_run, run_lanes,
                    shown_command, tidal_train_command)
from report import curve_mean, fmt_steps, iqm_of, library_row, markdown_table, milestones, plot_curves

FULL_BUDGET = ['env.stop_value=null']
PARALLEL_RUNS = 2  # one per core on the 2-core benchmark machines
QUICK_STEPS = 8000
INDEPENDENT = ['policy.model.global_critic=false']
TEAM_REWARD = ['env.team_reward=true']
# DI-engine's ptz_simple_spread_masac_config: n_agent=3 (n_landmark = n_agent), max_cycles=25, one team reward
# whose per-agent terms are global + local reward (twice mpe2's local_ratio=0.5 terms), eps 'linear' 1 -> 0.05
# over 100k env steps
DING_SETTINGS = ['env.env_kwargs.N=3', 'env.env_kwargs.max_cycles=25', *TEAM_REWARD, 'env.reward_scale=2.0',
                 'policy.other.eps.type=linear', 'policy.other.eps.start=1.0', 'policy.other.eps.end=0.05',
                 'policy.other.eps.decay=100000']
# label -> (zoo config, overrides)
VARIANTS = {
    'MASAC (discrete)': ('mpe_spread_discrete_sac', []),
    'MASAC (continuous)': ('mpe_spread_sac', []),
    'independent SAC (discrete)': ('mpe_spread_discrete_sac', INDEPENDENT),
    'MASAC (discrete, team reward)': ('mpe_spread_discrete_sac', TEAM_REWARD),
    'independent SAC (discrete, team reward)': ('mpe_spread_discrete_sac', [*TEAM_REWARD, *INDEPENDENT]),
    "MASAC (discrete, DI-engine's settings)": ('mpe_spread_discrete_sac', DING_SETTINGS),
}
RUN_NAMES = {'MASAC (discrete)': 'masac_discrete', 'MASAC (continuous)': 'masac_continuous',
             'independent SAC (discrete)': 'independent_discrete',
             'MASAC (discrete, team reward)': 'masac_discrete_team', 'independent SAC (discrete, team reward)':
             'independent_discrete_team', "MASAC (discrete, DI-engine's settings)": 'masac_discrete_ding'}
# --arms -> the variants run, and what the agents learn from (for the report)
ARM_SETS = {
    'agent_reward': (['MASAC (discrete)', 'MASAC (continuous)', 'independent SAC (discrete)'],
                     "each agent learns from its own reward"),
    'team_reward': (['MASAC (discrete, team reward)', 'independent SAC (discrete, team reward)',
                     "MASAC (discrete, DI-engine's settings)"],
                    "every agent learns from the team's reward, the agents' rewards summed (env.team_reward); "
                    "the DI-engine variant also doubles it (env.reward_scale=2: each agent's term is global + "
                    "local reward, as in DI-engine's simple_spread, whose logged returns are twice these) and collects "
                    "epsilon-greedy (policy.other.eps: linear, 1 -> 0.05 over 100k env steps), as its MASAC config"),
}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = benchmark_parser(__doc__, 300_000, QUICK_STEPS, threads=True)
    parser.add_argument('--arms', choices=sorted(ARM_SETS), default='agent_reward',
                        help='the set of variants to run (default: agent_reward, the per-agent-reward comparison)')
    parser.add_argument('--random-episodes', type=int, default=200)
    return benchmark_args(parser, argv,
                          lambda args: 'masac_mpe' if args.arms == 'agent_reward' else f'masac_mpe_{args.arms}')


def job(args: argparse.Namespace, label: str, seed: int) -> Job:
    config, overrides = VARIANTS[label]
    run_dir = args.out / 'runs' / f'{RUN_NAMES[label]}_seed{seed}'
    return Job(f'{RUN_NAMES[label]} seed {seed}',
               tidal_train_command(config, seed, args.steps, run_dir, [*FULL_BUDGET, *overrides]), run_dir)


def random_return(episodes: int, seed: int = 0) -> dict:
    """Mean and std of the summed episode return of uniform random actions (discrete simple_spread)."""
    from mpe2 import simple_spread_v3
    env = simple_spread_v3.parallel_env(N=3, max_cycles=25)
    rng = np.random.default_rng(seed)
    returns = []
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        total = 0.0
        while env.agents:
            actions = {agent: int(rng.integers(env.action_space(agent).n)) for agent in env.agents}
            _, rewards, _, _, _ = env.step(actions)
            total += sum(rewards.values())
        returns.append(total)
    return {'mean': float(np.mean(returns)), 'std': float(np.std(returns)), 'episodes': episodes}


def build_report(args: argparse.Namespace, random: dict) -> str:
    marks = milestones(args.steps)
    labels, learned_reward = ARM_SETS[args.arms]
    runs = {label: [read_run(job(args, label, seed).run_dir) for seed in args.seeds] for label in labels}
    rows = {label: library_row(runs[label], marks) for label in runs}
    plot_curves(runs, args.out / 'curves.png', 'MPE simple_spread, 3 agents (median, min-max band)',
                ylabel='eval return (sum over agents)', references={'uniform random': random['mean']})
    means = {label: [curve_mean(run['evals'], args.steps) for run in runs[label]] for label in runs}
    finals = {label: [run['evals'][-1]['return_mean'] for run in runs[label]] for label in runs}
    lines = ['| variant | final return | IQM | mean eval return over the run | IQM |',
             '|---|---|---|---|---|']
    for label in runs:
        seeds = ', '.join(f'{v:.1f}' for v in finals[label])
        lines.append(f'| {label} | {statistics.median(finals[label]):.1f} ({seeds}) | {iqm_of(finals[label])} '
                     f'| {statistics.median(means[label]):.1f} | {iqm_of(means[label])} |')
    lines.append(f"| uniform random | {random['mean']:.1f} (std {random['std']:.1f}, {random['episodes']} episodes) "
                 "| | | |")
    vers = {name: importlib.metadata.version(name) for name in ('tidal', 'torch', 'pettingzoo', 'mpe2')}
    results = {'benchmark': 'masac_mpe', 'arms': args.arms, 'seeds': args.seeds, 'steps': args.steps, 'versions': vers,
               'random': random, 'table': rows, 'final_returns': finals, 'mean_eval_return': means,
               'commands': {label: shown_command(job(args, label, args.seeds[0]).cmd, args.threads) for label in runs},
               'runs': {label: dict(zip(args.seeds, runs[label])) for label in runs}}
    (args.out / 'results.json').write_text(json.dumps(results, indent=1) + '\n')
    text = '\n'.join([
        f'# MASAC on MPE simple_spread, {args.steps} env steps ({fmt_steps(args.steps)})', '',
        f'Seeds {args.seeds}, {args.threads} torch thread(s) per run, {PARALLEL_RUNS} runs at a time. Return: the '
        'episode reward summed over the 3 agents (25 steps), deterministic evaluation on 32 episodes (the zoo configs\' n_evaluator_episode).',
        f'Arms `{args.arms}`: {learned_reward}; the return is the env\'s own rewards summed either way.', '',
        markdown_table(rows, marks, first_column='variant'), '', '\n'.join(lines), '', '![curves](curves.png)', '',
        f"Versions: tidal {vers['tidal']}, torch {vers['torch']}, pettingzoo {vers['pettingzoo']}, mpe2 {vers['mpe2']}.",
        '', 'Commands (first seed), from the repo root:', '', '```', *results['commands'].values(), '```', ''])
    (args.out / 'table.md').write_text(text)
    return text


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    labels, _ = ARM_SETS[args.arms]
    if not args.report_only:
        for label in labels:
            config, overrides = VARIANTS[label]
            check_tidal_config(config, [*FULL_BUDGET, *overrides])
        ordered = [job(args, label, seed) for seed in args.seeds for label in labels]
        for item in ordered:
            print(f'$ {shown_command(item.cmd, args.threads)}', flush=True)
        run_lanes([ordered[0::PARALLEL_RUNS], ordered[1::PARALLEL_RUNS]], args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    print('\n' + build_report(args, random_return(args.random_episodes)))
    print(f'outputs in {display_path(args.out)}: results.json, curves.png, table.md')


if __name__ == '__main__':
    sys.exit(main())
