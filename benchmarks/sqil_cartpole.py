"""Learning-curve benchmark of tidal's discrete SQIL (`sqil`, on soft Q-learning) on CartPole-v1, tidal only.

First trains the expert, `tidal train cartpole_dqn` (seed 0, until its evaluation reaches the config's stop
value of 475), unless its run folder is there already; then `zoo_curve.py` runs the `cartpole_sqil` zoo config
(DI-engine's `cartpole_sqil` settings) with `policy.collect.model_path` naming that run folder: each seed records
the expert's 10 greedy episodes, then learns from them and its own reward-free transitions. Takes zoo_curve's
options but CONFIG.

    python benchmarks/sqil_cartpole.py [--seeds 0 1 2] [--steps 100000] [--threads 1]
"""
import sys

from common import BENCH_DIR, Job, display_path, read_run, run_batch, tidal_train_command
from zoo_curve import main

EXPERT_CONFIG, EXPERT_SEED, EXPERT_BUDGET = 'cartpole_dqn', 0, 200_000


def expert_run_dir(quick: bool) -> str:
    """The expert's run folder (trained here unless it finished before), as the SQIL runs' model_path."""
    run_dir = BENCH_DIR / 'results' / ('sqil_cartpole_quick' if quick else 'sqil_cartpole') / 'expert'
    if not (run_dir / 'summary.json').exists():
        budget = 2000 if quick else EXPERT_BUDGET
        run_batch('the expert: cartpole_dqn until its stop value', [
            Job('expert', tidal_train_command(EXPERT_CONFIG, EXPERT_SEED, budget, run_dir, []), run_dir)], threads=1)
    print(f"expert: final eval return {read_run(run_dir)['evals'][-1]['return_mean']:.1f}", flush=True)
    return display_path(run_dir)


if __name__ == '__main__':
    expert = expert_run_dir('--quick' in sys.argv)
    sys.exit(main(config='cartpole_sqil', name='sqil_cartpole', steps=100_000,
                  extra_sets=[f'policy.collect.model_path={expert}'],
                  title='SQIL (soft Q-learning) on CartPole-v1 from a DQN expert (tidal)', label='tidal SQIL',
                  notes=['The expert is `cartpole_dqn` (seed 0) trained until its evaluation reached 475; each '
                         'seed records its 10 greedy episodes. SQIL never sees the env reward: the curve is the '
                         "env's return of the greedy imitator.",
                         'The maximum return on CartPole-v1 is 500.']))
