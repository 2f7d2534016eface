"""tidal PPO on Atari Breakout for as many env steps as fit, beside the SB3 zoo's published run.

`zoo_curve.py` on the `breakout_ppo` zoo config (CleanRL's and the SB3 zoo's Atari PPO settings): two seeds at
a time, one per core; evaluation plays 4 whole games (all lives, unclipped score, sampled actions, as the
published training episodes are) every 25 rollouts. Env steps are agent steps, 4 frames each.

    python benchmarks/ppo_breakout.py [--seeds 0 1] [--steps 200000]
"""
import sys

from published import PUBLISHED_FINAL, SB3_ZOO_PPO_ATARI, SB3_ZOO_SOURCE
from zoo_curve import main

FINALS = '; '.join(f'{name}: {value}' for name, value in PUBLISHED_FINAL['ppo_atari']['Breakout'].items())

if __name__ == '__main__':
    sys.exit(main(config='breakout_ppo', name='ppo_breakout', steps=200_000, seeds=[0, 1],
                  title='PPO on Breakout (tidal)', label='tidal PPO',
                  ylabel='eval game score (whole games, sampled actions)',
                  extra_sets=['policy.eval.evaluator.eval_freq=400'],  # 25 rollouts of 16 updates
                  published=SB3_ZOO_PPO_ATARI['Breakout'], published_label=SB3_ZOO_SOURCE,
                  notes=[f'Published at 10M env steps (40M frames): {FINALS}.']))
