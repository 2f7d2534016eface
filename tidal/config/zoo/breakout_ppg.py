"""PPG on Atari Breakout (BreakoutNoFrameskip-v4) with the settings of `pong_ppg`. Needs ale-py
(`pip install -e ".[atari]"`).
"""
import copy

from tidal.config.zoo import pong_ppg

main_config = copy.deepcopy(pong_ppg.main_config)
main_config['exp_name'] = 'breakout_ppg'
main_config['env'].update(env_id='BreakoutNoFrameskip-v4', stop_value=None)

create_config = copy.deepcopy(pong_ppg.create_config)
