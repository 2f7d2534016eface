"""Learning-curve benchmark of tidal's discrete SAC on CartPole-v1 (tidal only: SB3 has no discrete SAC).

`zoo_curve.py` on the `cartpole_discrete_sac` zoo config with this benchmark's defaults; it takes the
same options but CONFIG.

    python benchmarks/discrete_sac_cartpole.py [--seeds 0 1 2] [--steps 20000] [--threads 1]
"""
import sys

from zoo_curve import main

if __name__ == '__main__':
    sys.exit(main(config='cartpole_discrete_sac', name='discrete_sac_cartpole', steps=20_000,
                  title='Discrete SAC on CartPole-v1 (tidal)', label='tidal discrete SAC',
                  notes=['The maximum return on CartPole-v1 is 500.']))
