"""tidal PPO on Hopper-v5 (MuJoCo) with CleanRL's continuous-action settings, beside the SB3 zoo's published run.

`zoo_curve.py` on the `hopper_ppo` zoo config: 3 seeds, two at a time, one per core; 5 greedy evaluation
episodes every 5 rollouts (10,240 env steps). The SB3 zoo's run uses its own tuned settings, so its curve
places tidal's without testing it.

    python benchmarks/ppo_hopper.py [--seeds 0 1 2] [--steps 300000]
"""
import sys

from published import SB3_ZOO_PPO_MUJOCO
from zoo_curve import main

if __name__ == '__main__':
    sys.exit(main(config='hopper_ppo', name='ppo_hopper', steps=300_000,
                  title='PPO on Hopper-v5 (tidal, CleanRL settings)', label='tidal PPO',
                  published=SB3_ZOO_PPO_MUJOCO['Hopper'], published_label='SB3 zoo run, its own settings (1 seed, training episodes)',
                  notes=['Hopper-v5 episodes end at 1000 steps; the published run is on Hopper-v3.']))
