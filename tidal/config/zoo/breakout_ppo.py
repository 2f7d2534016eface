"""PPO on Atari Breakout (BreakoutNoFrameskip-v4) with the CleanRL / SB3 zoo settings of `pong_ppo`.

Breakout waits for FIRE after each reset (and each lost life); the env presses it, as DI-engine's and
SB3's Atari wrappers do. Needs ale-py (`pip install -e ".[atari]"`).
"""
import copy

from tidal.config.zoo import pong_ppo

main_config = copy.deepcopy(pong_ppo.main_config)
main_config['exp_name'] = 'breakout_ppo'
main_config['env'].update(env_id='BreakoutNoFrameskip-v4', stop_value=None)
# Evaluation samples its actions: after a lost life Breakout waits for FIRE, which a greedy policy may never
# choose, and a whole game would then run to ALE's 108k-frame limit.
main_config['policy']['eval']['deterministic'] = False

create_config = copy.deepcopy(pong_ppo.create_config)
