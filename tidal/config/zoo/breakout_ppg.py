"""PPG on Atari Breakout (BreakoutNoFrameskip-v4) with the settings of `pong_ppg`. Needs ale-py
(`pip install -e ".[atari]"`).
"""
import copy

from tidal.config.zoo import pong_ppg

main_config = copy.deepcopy(pong_ppg.main_config)
main_config['exp_name'] = 'breakout_ppg'
main_config['env'].update(env_id='BreakoutNoFrameskip-v4', stop_value=None)
# Evaluation samples its actions: after a lost life Breakout waits for FIRE, which a greedy policy may never
# choose, and a whole game would then run to ALE's 108k-frame limit.
main_config['policy']['eval']['deterministic'] = False

create_config = copy.deepcopy(pong_ppg.create_config)
