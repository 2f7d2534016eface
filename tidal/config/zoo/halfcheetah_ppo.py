"""PPO on HalfCheetah-v5 (MuJoCo) with `hopper_ppo`'s settings, CleanRL's continuous-action PPO, which it runs
unchanged on every MuJoCo task.

Needs the `mujoco` package (`pip install -e ".[mujoco]"`).
"""
import copy

from tidal.config.zoo import hopper_ppo

main_config = copy.deepcopy(hopper_ppo.main_config)
main_config['exp_name'] = 'halfcheetah_ppo'
main_config['env'].update(env_id='HalfCheetah-v5', stop_value=4800)  # gymnasium's reward threshold

create_config = copy.deepcopy(hopper_ppo.create_config)
