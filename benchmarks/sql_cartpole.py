"""Learning-curve benchmark of tidal's soft Q-learning (`sql`) on CartPole-v1 (tidal only: SB3 has no SQL).

`zoo_curve.py` on the `cartpole_sql` zoo config (DI-engine's `cartpole_sql` settings) with this benchmark's
defaults; it takes the same options but CONFIG.

    python benchmarks/sql_cartpole.py [--seeds 0 1 2] [--steps 100000] [--threads 1]
"""
import sys

from zoo_curve import main

if __name__ == '__main__':
    sys.exit(main(config='cartpole_sql', name='sql_cartpole', steps=100_000,
                  title='Soft Q-learning on CartPole-v1 (tidal)', label='tidal SQL',
                  notes=['The maximum return on CartPole-v1 is 500.']))
